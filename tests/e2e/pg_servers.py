"""Real PostgreSQL-side servers a production setup puts around flowledger
(issue 34): a PgBouncer in transaction mode in front of the test server
(item 5); a primary of its own with a streaming replica (item 6: the test
server's pg_hba.conf allows no replication connection).
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


def _pg_bin() -> Path:
    """The newest Debian server's binaries (/usr/lib/postgresql/<major>/bin)."""
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin"), key=lambda p: int(p.parent.name))
    assert found, "no PostgreSQL server binaries under /usr/lib/postgresql"
    return found[-1]


def _pg(tool: str, *args: str, timeout: float = 60) -> None:
    done = subprocess.run(
        [str(_pg_bin() / tool), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        **_as_postgres(),
    )
    if done.returncode != 0:
        raise AssertionError(f"{tool} failed: {done.stdout}{done.stderr}")


def _start_cluster(data: Path, port: int, sockets: Path) -> None:
    _pg(
        "pg_ctl",
        "-D",
        str(data),
        "-l",
        str(data.parent / f"{data.name}.log"),
        "-o",
        f"-p {port} -k {sockets} -c listen_addresses=127.0.0.1",
        "-w",
        "start",
    )


def _stop_cluster(data: Path) -> None:
    if (data / "postmaster.pid").exists():
        _pg("pg_ctl", "-D", str(data), "-m", "immediate", "-w", "stop")


@contextmanager
def primary_and_replica() -> Iterator[tuple[str, str]]:
    """A PostgreSQL primary of its own (``initdb``, trust auth, which also
    lets 127.0.0.1 replicate) and a streaming replica of it
    (``pg_basebackup -R -X stream``, hot standby), each on a free port of
    127.0.0.1; yields their URLs (database ``postgres``). Both are stopped
    and removed afterwards."""
    with server_dir("fl-replica-") as folder:
        primary, replica = folder / "primary", folder / "replica"
        primary_port, replica_port = free_port(), free_port()
        _pg("initdb", "-D", str(primary), "-U", "postgres", "--auth=trust", "-N", "-E", "UTF8")
        with (primary / "postgresql.conf").open("a") as conf:
            conf.write("fsync = off\nwal_level = replica\nmax_wal_senders = 4\n")
        try:
            _start_cluster(primary, primary_port, folder)
            _pg(
                "pg_basebackup",
                "-h",
                "127.0.0.1",
                "-p",
                str(primary_port),
                "-U",
                "postgres",
                "-D",
                str(replica),
                "-R",
                "-X",
                "stream",
                "-c",
                "fast",
            )
            _start_cluster(replica, replica_port, folder)
            yield (
                f"postgresql://postgres@127.0.0.1:{primary_port}/postgres",
                f"postgresql://postgres@127.0.0.1:{replica_port}/postgres",
            )
        finally:
            _stop_cluster(replica)
            _stop_cluster(primary)
