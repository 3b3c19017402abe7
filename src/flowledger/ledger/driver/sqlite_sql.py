"""The SQLite statements of the ledger driver's fast-path claim and success
settlement (SPEC L-7, L-9; issue 15 item 4), sent as driver SQL with values
bound and read exactly as the column types bind and read them (JSON text,
UTC timestamps), so the rows are those the portable Core writes; the
conformance suite runs both (``sqlite`` and ``sqlite-fast``).

:class:`~flowledger.ledger.driver.sqlite.SqliteFastLedger` runs each
function here inside one ``BEGIN IMMEDIATE`` transaction on its
:class:`~flowledger.db.sqlite_hotpath.SqliteHotPath` thread. SQLite has one
writer at a time, so the claim needs no row locks: select the due
candidates in claim order, none of a paused pool or type
(:mod:`.pause_filter`) (the index that has the order, ``LIMIT``) and,
in that statement, the earliest ``run_at`` of the pool's other pending jobs
(when the pool is to claim next), lease
them in one ``UPDATE … RETURNING`` (a fresh token and deadline each), add
their attempt rows in one ``INSERT … SELECT … RETURNING``. Settlement: the
jobs still fenced by (id, generation, lease token, running) → succeeded,
then only their running attempt rows finished. Statement texts depend only
on the batch size (at most a pool's slots), so the driver's statement cache
keeps them prepared.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from functools import lru_cache
from typing import Any

from sqlalchemy import Connection
from sqlalchemy.engine import Dialect

from flowledger.db.schema import workflow_job_executions, workflow_jobs
from flowledger.ledger.driver.pause_filter import UNPAUSED_SQL

CLAIMED = (
    *("id", "type", "pool", "payload", "generation", "attempts", "max_attempts"),
    *("lease_token", "lease_until", "execution_deadline", "run_at", "operation_key"),
    *("trace_id", "tenant_id", "instance_id", "task_id", "node_key", "priority"),
)
SKIPPED, SUCCEEDED = "skipped", "succeeded"  # attempt statuses
_ORDERS = {"priority": "priority, run_at, id", "due": "run_at, id"}
# ``coalesce`` keeps ``run_at`` out of the planner's index search: SQLite,
# which keeps no statistics, then walks the index that has the claim's order
# and stops after LIMIT rows instead of sorting every due row. The last row
# (id NULL) is the earliest run_at of the pool's pending jobs not among the
# candidates: when the claim must look again, in the same statement (an
# index walk in run_at order, not min(), which would read every pending row).
_CANDIDATES = {
    order: "WITH c AS MATERIALIZED (SELECT id, execution_timeout_ms FROM workflow_jobs "
    "WHERE pool = ? AND status = 'pending' AND coalesce(run_at, run_at) <= ? "
    f"AND {UNPAUSED_SQL} ORDER BY {columns} LIMIT ?) "
    "SELECT id, execution_timeout_ms, NULL FROM c UNION ALL "
    "SELECT NULL, NULL, (SELECT run_at FROM workflow_jobs "
    "WHERE pool = ? AND status = 'pending' AND id NOT IN (SELECT id FROM c) "
    f"AND {UNPAUSED_SQL} ORDER BY run_at LIMIT 1)"
    for order, columns in _ORDERS.items()
}


def _marks(n: int) -> str:
    return ", ".join("?" * n)


def _case(n: int) -> str:
    return "CASE id " + "WHEN ? THEN ? " * n + "END"


class _Types:
    """Bind and result processors of the ledger's columns for one dialect."""

    def __init__(self, dialect: Dialect) -> None:
        self.bind: dict[str, Callable[[Any], Any]] = {}
        self.read: dict[str, Callable[[Any], Any]] = {}
        for table in (workflow_jobs, workflow_job_executions):
            for column in table.c:
                impl = column.type.dialect_impl(dialect)
                bind = impl.bind_processor(dialect)
                read = impl.result_processor(dialect, None)
                key = f"{table.name}.{column.name}"
                self.bind[key] = bind or (lambda value: value)
                self.read[key] = read or (lambda value: value)

    def job(self, column: str, value: Any) -> Any:
        return self.bind[f"workflow_jobs.{column}"](value)

    def attempt(self, column: str, value: Any) -> Any:
        return self.bind[f"workflow_job_executions.{column}"](value)

    def job_row(self, row: Sequence[Any]) -> dict[str, Any]:
        return {
            name: self.read[f"workflow_jobs.{name}"](value)
            for name, value in zip(CLAIMED, row, strict=True)
        }


@lru_cache(maxsize=8)
def _dialect_types(dialect: Dialect) -> _Types:
    """A pure memo per dialect object (the processors never change)."""
    return _Types(dialect)


def _types(conn: Connection) -> _Types:
    return _dialect_types(conn.dialect)


def claim(
    conn: Connection,
    *,
    pool: str,
    limit: int,
    node_id: str,
    now: datetime,
    lease_ms: int,
    order: str,
) -> tuple[list[dict[str, Any]], datetime | None]:
    """pending → running for up to ``limit`` due jobs of ``pool``, one attempt
    row each: the claimed rows (``CLAIMED`` plus ``execution_id`` and
    ``started_at``) in claim order, and the earliest ``run_at`` of the
    pool's pending jobs not claimed (None: there is none)."""
    t = _types(conn)
    now_bound = t.job("run_at", now)
    found = conn.exec_driver_sql(_CANDIDATES[order], (pool, now_bound, limit, pool)).all()
    candidates = [(job_id, timeout_ms) for job_id, timeout_ms, _ in found if job_id is not None]
    due_raw = next((due for job_id, _, due in found if job_id is None), None)
    next_due = None if due_raw is None else t.read["workflow_jobs.run_at"](due_raw)
    if not candidates:
        return [], next_due
    lease_until = now + timedelta(milliseconds=lease_ms)
    tokens: list[Any] = []
    deadlines: list[Any] = []
    leases: list[Any] = []
    for job_id, timeout_ms in candidates:
        deadline = now + timedelta(milliseconds=timeout_ms)
        tokens += [job_id, uuid.uuid4().hex]
        deadlines += [job_id, t.job("execution_deadline", deadline)]
        leases += [job_id, t.job("lease_until", min(lease_until, deadline))]
    ids = [job_id for job_id, _ in candidates]
    n = len(ids)
    leased = conn.exec_driver_sql(
        "UPDATE workflow_jobs SET status = 'running', attempts = attempts + 1, "
        f"lease_token = {_case(n)}, lease_owner = ?, execution_deadline = {_case(n)}, "
        f"lease_until = {_case(n)}, side_effect_at = NULL, updated_at = ? "
        f"WHERE id IN ({_marks(n)}) RETURNING {', '.join(CLAIMED)}",
        (*tokens, node_id, *deadlines, *leases, t.job("updated_at", now), *ids),
    ).all()
    rows = [t.job_row(row) for row in leased]
    key = ("priority", "run_at", "id") if order == "priority" else ("run_at", "id")
    rows.sort(key=lambda r: tuple(r[k] for k in key))
    attempts = conn.exec_driver_sql(
        "INSERT INTO workflow_job_executions "
        "(job_id, generation, attempt, status, node_id, scheduled_at, started_at) "
        "SELECT id, generation, attempts, 'running', ?, run_at, ? FROM workflow_jobs "
        f"WHERE id IN ({_marks(n)}) RETURNING id, job_id",
        (node_id, t.attempt("started_at", now), *ids),
    ).all()
    execution_of = {int(job_id): int(execution_id) for execution_id, job_id in attempts}
    for row in rows:
        row["execution_id"] = execution_of[int(row["id"])]
        row["started_at"] = now
    return rows, next_due


def settle_successes(
    conn: Connection,
    *,
    ids: Sequence[int],
    gens: Sequence[int],
    tokens: Sequence[str],
    exec_ids: Sequence[int],
    durations: Sequence[int | None],
    skipped: Sequence[bool],
    results: Sequence[Any],
    now: datetime,
) -> set[int]:
    """The fenced jobs → succeeded, then only their running attempts finished;
    the ids settled (one list entry per job)."""
    t = _types(conn)
    n = len(ids)
    fences = [value for fence in zip(ids, gens, tokens, strict=True) for value in fence]
    result_case = [
        v
        for job_id, r in zip(ids, results, strict=True)
        for v in (job_id, None if r is None else t.job("result", r))
    ]
    settled = conn.exec_driver_sql(
        f"UPDATE workflow_jobs SET status = 'succeeded', result = {_case(n)}, "
        "last_error = NULL, last_error_code = NULL, last_error_fingerprint = NULL, "
        "lease_token = NULL, lease_until = NULL, lease_owner = NULL, updated_at = ? "
        f"WHERE id IN ({_marks(n)}) AND status = 'running' "
        f"AND (id, generation, lease_token) IN (VALUES {', '.join(['(?, ?, ?)'] * n)}) "
        "RETURNING id",
        (*result_case, t.job("updated_at", now), *ids, *fences),
    ).all()
    done = {int(row[0]) for row in settled}
    if not done:
        return done
    attempts = [e for job_id, e in zip(ids, exec_ids, strict=True) if job_id in done]
    status = [
        v for e, s in zip(exec_ids, skipped, strict=True) for v in (e, SKIPPED if s else SUCCEEDED)
    ]
    duration = [v for e, d in zip(exec_ids, durations, strict=True) for v in (e, d)]
    conn.exec_driver_sql(
        f"UPDATE workflow_job_executions SET status = {_case(n)}, finished_at = ?, "
        f"duration_ms = {_case(n)} WHERE id IN ({_marks(len(attempts))}) AND status = 'running'",
        (*status, t.attempt("finished_at", now), *duration, *attempts),
    )
    return done
