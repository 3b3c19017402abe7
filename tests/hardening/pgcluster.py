"""A throwaway PostgreSQL cluster for the fault tests (issue 17 items 12 and
the chaos test): ``initdb`` into a temporary folder (as the ``postgres`` OS
user when run as root), started on a free port with its socket in that
folder, stopped/restarted at will, and removed afterwards. The shared server
at 127.0.0.1:5432 is never touched."""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

BIN = Path("/usr/lib/postgresql/15/bin")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Cluster:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.data = folder / "data"
        self.port = _free_port()
        self.url = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"
        self._as: list[str] = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []

    def _run(self, *args: str, timeout: float = 60) -> None:
        subprocess.run(
            [*self._as, *args], check=True, capture_output=True, timeout=timeout, cwd=self.folder
        )

    def init(self) -> None:
        self._run(str(BIN / "initdb"), "-D", str(self.data), "--auth=trust", "-U", "postgres",
                  "--no-sync", "-E", "UTF8")  # fmt: skip

    def _ctl(self, action: str, *extra: str) -> None:
        options = (
            f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1 "
            "-c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        )
        self._run(str(BIN / "pg_ctl"), "-D", str(self.data), "-o", options,
                  "-l", str(self.folder / "server.log"), "-w", *extra, action)  # fmt: skip

    def start(self) -> None:
        self._ctl("start")

    def stop(self) -> None:
        self._ctl("stop", "-m", "fast")

    def restart(self) -> None:
        self._ctl("restart", "-m", "fast")

    def running(self) -> bool:
        return (self.data / "postmaster.pid").exists()


@contextmanager
def throwaway_cluster() -> Iterator[Cluster]:
    folder = Path(tempfile.mkdtemp(prefix="flowledger-hardening-pg-"))
    if os.geteuid() == 0:
        user = pwd.getpwnam("postgres")
        os.chown(folder, user.pw_uid, user.pw_gid)
    cluster = Cluster(folder)
    try:
        cluster.init()
        yield cluster
    finally:
        if cluster.running():
            with suppress(subprocess.SubprocessError):
                cluster._ctl("stop", "-m", "immediate")
        shutil.rmtree(folder, ignore_errors=True)
