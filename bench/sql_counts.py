"""Machine-independent bench figures (issue 15 item 1): SQL statements and
committed transactions, counted with SQLAlchemy event hooks.

A statement is one round trip to the database (``before_cursor_execute``;
an executemany is one; on PostgreSQL also each statement a
``DirectConnection`` sends past SQLAlchemy: the engine's ``observers`` in
the bench process, a wrapped ``DirectConnection._send`` in a worker). A
commit is one ``commit`` event, or one statement run on an autocommit
connection (each is its own transaction). The ledger's PostgreSQL hot path
talks psycopg directly (autocommit, one statement per call), so its calls
are counted by wrapping :meth:`PgHotPath.run`.

Bench processes call :func:`watch_database` on the database under test.
Worker processes import this module (``flowledger worker --import
sql_counts``): it then counts every engine of the process and, when
``FLOWLEDGER_BENCH_COUNTS`` names a directory, writes its totals there at
exit and on SIGUSR1 (:func:`snapshot`); :func:`collect` sums them.
"""

from __future__ import annotations

import atexit
import cProfile
import json
import os
import signal
import time
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import Engine

from flowledger.db import pg_direct
from flowledger.db.database import Database
from flowledger.db.pg_hotpath import PgHotPath

ENV = "FLOWLEDGER_BENCH_COUNTS"
BY_SQL_ENV = "FLOWLEDGER_BENCH_COUNTS_BY_SQL"  # set: also tally statements by their opening
PROFILE_ENV = "FLOWLEDGER_BENCH_PROFILE"  # a directory: cProfile each worker into it


@dataclass
class Counts:
    statements: int = 0
    commits: int = 0

    def add(self, other: Counts) -> None:
        self.statements += other.statements
        self.commits += other.commits


TOTALS = Counts()
BY_SQL: Counter[str] = Counter()


def _before_execute(conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
    _count(conn, statement)


_BY_SQL = bool(os.environ.get(BY_SQL_ENV))  # read once: the counting hooks run per statement


def _count(conn: Any, statement: str | bytes) -> None:
    TOTALS.statements += 1
    if _BY_SQL:
        text = statement.decode() if isinstance(statement, bytes) else statement
        BY_SQL[" ".join(text.split())[:90]] += 1
    if conn.get_execution_options().get("isolation_level") == "AUTOCOMMIT":
        TOTALS.commits += 1


def _commit(_conn: Any) -> None:
    TOTALS.commits += 1


def watch(target: Any) -> None:
    """Count the statements and commits of ``target`` (an Engine, or the Engine class)."""
    event.listen(target, "before_cursor_execute", _before_execute)
    event.listen(target, "commit", _commit)

    if target is not Engine:
        return
    send = pg_direct.DirectConnection._send  # every direct statement of this process

    async def counted(
        self: pg_direct.DirectConnection, driver: Any, plan: Any, sql: bytes, params: Any
    ) -> Any:
        _count(self.sync_connection, sql)  # decoded only for the by-statement tally
        return await send(self, driver, plan, sql, params)

    pg_direct.DirectConnection._send = counted  # type: ignore[method-assign]
    _EVERY_ENGINE.append(True)


def watch_database(db: Database) -> None:
    """Count the statements and commits of ``db``: its SQLAlchemy engine's
    and, on PostgreSQL, those it sends past SQLAlchemy."""
    watch(db.engine.sync_engine)
    if isinstance(db.engine, pg_direct.DirectEngine):
        db.engine.observers.append(_observe_direct)


_EVERY_ENGINE: list[bool] = []  # set once watch(Engine) wrapped DirectConnection._send


def _observe_direct(conn: Any, sql: str) -> None:
    if not _EVERY_ENGINE:  # else the wrapped _send counts it already (an in-process worker)
        _count(conn.sync_connection, sql)


def reset() -> None:
    TOTALS.statements = TOTALS.commits = 0


def _count_hot_path() -> None:
    run = PgHotPath.run

    async def counted(self: PgHotPath, sql: str, params: dict[str, Any]) -> Any:
        TOTALS.statements += 1
        TOTALS.commits += 1
        return await run(self, sql, params)

    PgHotPath.run = counted  # type: ignore[method-assign]


def _dump(*_args: Any) -> None:
    directory = os.environ.get(ENV)
    if directory:
        tmp = Path(directory, f"{os.getpid()}.tmp")
        tmp.write_text(json.dumps(asdict(TOTALS)))
        tmp.replace(Path(directory, f"{os.getpid()}.json"))
        dump_by_sql(directory, str(os.getpid()))


def dump_by_sql(directory: str | Path, name: str) -> None:
    """Write the by-statement tally (when one was kept) to ``directory/name.sql``."""
    if BY_SQL:
        lines = [f"{n:8d}  {sql}" for sql, n in BY_SQL.most_common()]
        Path(directory, f"{name}.sql").write_text("\n".join(lines) + "\n")


def collect(directory: str | Path) -> Counts:
    """The sum of the totals the worker processes wrote to ``directory``."""
    total = Counts()
    for path in Path(directory).glob("*.json"):
        total.add(Counts(**json.loads(path.read_text())))
    return total


def snapshot(directory: str | Path, pids: list[int], timeout_s: float = 10.0) -> Counts:
    """Ask the running workers ``pids`` for their totals so far and sum them."""
    for path in Path(directory).glob("*.json"):
        path.unlink()
    for pid in pids:
        os.kill(pid, signal.SIGUSR1)
    deadline = time.monotonic() + timeout_s
    while len(list(Path(directory).glob("*.json"))) < len(pids):
        if time.monotonic() > deadline:
            raise SystemExit("workers did not report their statement counts")
        time.sleep(0.05)
    return collect(directory)


def per(counts: Counts, n: int, unit: str) -> str:
    statements, commits = counts.statements / n, counts.commits / n
    return f"statements_per_{unit}={statements:.2f} commits_per_{unit}={commits:.2f}"


def in_worker() -> None:
    """Count everything this process runs and write the totals at exit."""
    watch(Engine)
    _count_hot_path()
    atexit.register(_dump)
    signal.signal(signal.SIGUSR1, _dump)
    profile_dir = os.environ.get(PROFILE_ENV)
    if profile_dir:
        profiler = cProfile.Profile()
        profiler.enable()
        atexit.register(profiler.dump_stats, str(Path(profile_dir, f"worker-{os.getpid()}.prof")))


if os.environ.get(ENV):
    in_worker()
