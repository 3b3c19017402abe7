"""Real PostgreSQL-side servers a production setup puts around flowledger
(issue 34): a PgBouncer in transaction mode in front of the test server.
Each is a process of Debian's binaries, started by the test on a free port
of 127.0.0.1 from a generated configuration and stopped after it. They run
as the ``postgres`` OS user when the tests run as root (both refuse root)."""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy.engine import make_url

PGBOUNCER = "/usr/sbin/pgbouncer"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _as_postgres() -> dict[str, Any]:
    """Popen arguments that drop root to the ``postgres`` user."""
    if os.geteuid() != 0:
        return {}
    return {"user": "postgres", "group": "postgres"}


@contextmanager
def server_dir(prefix: str) -> Iterator[Path]:
    """A fresh folder the server's user owns (pytest's tmp_path is root's, 0700)."""
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        if os.geteuid() == 0:
            entry = pwd.getpwnam("postgres")
            os.chown(folder, entry.pw_uid, entry.pw_gid)
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def wait_for_port(port: int, proc: subprocess.Popen[bytes], log: Path, within: float) -> None:
    deadline = time.monotonic() + within
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            pass
        if proc.poll() is not None:
            raise AssertionError(f"server exited: {log.read_text(errors='replace')}")
        if time.monotonic() > deadline:
            raise AssertionError(f"server never listened: {log.read_text(errors='replace')}")
        time.sleep(0.05)


@contextmanager
def pgbouncer(server_url: str, *, pool_size: int = 5) -> Iterator[int]:
    """A PgBouncer (``pool_mode = transaction``, trust auth for the URL's
    user, ``pool_size`` server connections per database) in front of the
    server of ``server_url``, every database passed through; yields its port."""
    url = make_url(server_url)
    user = url.username or "postgres"
    port = free_port()
    with server_dir("fl-pgbouncer-") as folder:
        (folder / "userlist.txt").write_text(f'"{user}" ""\n')
        log = folder / "pgbouncer.log"
        ini = folder / "pgbouncer.ini"
        ini.write_text(
            "[databases]\n"
            f"* = host={url.host or '127.0.0.1'} port={url.port or 5432}\n"
            "[pgbouncer]\n"
            "listen_addr = 127.0.0.1\n"
            f"listen_port = {port}\n"
            "unix_socket_dir =\n"
            "auth_type = trust\n"
            f"auth_file = {folder / 'userlist.txt'}\n"
            f"admin_users = {user}\n"
            "pool_mode = transaction\n"
            f"default_pool_size = {pool_size}\n"
            "max_client_conn = 400\n"
        )
        with log.open("ab") as out:
            proc = subprocess.Popen(
                [PGBOUNCER, str(ini)], stdout=out, stderr=subprocess.STDOUT, **_as_postgres()
            )
        try:
            wait_for_port(port, proc, log, within=10)
            yield port
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def pgbouncer_show(port: int, what: str) -> list[list[str]]:
    """``SHOW what`` on PgBouncer's admin console (simple protocol: psql)."""
    psql = ["psql", "-h", "127.0.0.1", "-p", str(port), "-U", "postgres", "-AtF|"]
    done = subprocess.run(
        [*psql, "-c", f"SHOW {what}", "pgbouncer"],
        capture_output=True,
        text=True,
        timeout=10,
        check=True,
    )
    return [line.split("|") for line in done.stdout.splitlines() if line]
