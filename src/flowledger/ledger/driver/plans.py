"""The portable claim (SPEC L-6, L-7, L-10) and batch success settlement
(L-3, L-9) as sans-I/O *plans*: generators that yield each statement and
are sent its rows, so that one text of the SQL runs over two transports —
an async connection (:func:`run_async`, used by
:class:`~flowledger.ledger.driver.core.CoreLedger`) and a sync connection on
the SQLite fast path's own thread (:func:`run_sync`, used by
:class:`~flowledger.ledger.driver.sqlite.SqliteFastLedger`: one thread hop
per transaction instead of several per statement).

Claim, three statements whatever the batch size: select the due candidates
(``FOR UPDATE SKIP LOCKED`` where the database has row locks), lease them in
one ``UPDATE … RETURNING`` (a fresh lease token and deadline per job), add
their attempt rows in one ``INSERT … SELECT … RETURNING``. Settlement, two:
the fenced jobs (locked in id order) → succeeded, then only their running
attempt rows finished.
"""

from __future__ import annotations

import uuid
from collections.abc import Generator, Sequence
from datetime import datetime, timedelta
from typing import Any, TypeVar

from sqlalchemy import (
    Connection,
    Executable,
    bindparam,
    case,
    func,
    literal,
    select,
    tuple_,
    update,
)
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db.schema import workflow_job_executions as executions
from flowledger.db.schema import workflow_jobs as jobs
from flowledger.db.types import JsonType
from flowledger.ledger.driver.fence import STILL_RUNNING
from flowledger.ledger.driver.pause_filter import unpaused
from flowledger.ledger.models import SuccessRow
from flowledger.states import AttemptStatus, JobStatus

CLAIMED_COLUMNS = (
    *("id", "type", "pool", "payload", "generation", "attempts", "max_attempts"),
    *("lease_token", "lease_until", "execution_deadline", "run_at", "operation_key"),
    *("trace_id", "tenant_id", "instance_id", "task_id", "node_key", "priority"),
)
CLEAR_LEASE: dict[str, Any] = {"lease_token": None, "lease_until": None, "lease_owner": None}


def fence_clause(fences: list[tuple[int, int, str]]) -> Any:
    """``id IN (…) AND (id, generation, lease_token) IN (…) AND status IS
    NOT DISTINCT FROM 'running'`` (the plain ``id IN`` lets every planner
    find the rows by primary key; the status test is the fence's
    :data:`~flowledger.ledger.driver.fence.STILL_RUNNING`, which no index
    serves, so none is chosen instead)."""
    return (
        jobs.c.id.in_([fence[0] for fence in fences])
        & tuple_(jobs.c.id, jobs.c.generation, jobs.c.lease_token).in_(fences)
        & STILL_RUNNING
    )


def locked_in_id_order(*conditions: Any, skip_locked: bool = False) -> Any:
    """``workflow_jobs.id IN (SELECT id … WHERE conditions ORDER BY id FOR
    UPDATE)``: the rows a multi-row writer changes, locked in id order.
    Every multi-row writer of ``workflow_jobs`` locks its rows in that one
    order, so two of them over the same jobs queue behind each other instead
    of deadlocking (issue 15: the lease renewer and the batched settlement
    did). The lock re-checks ``conditions`` on the row version it got, so a
    fence that a concurrent writer broke excludes the row. ``skip_locked``:
    leave out rows another transaction holds (the writer then never waits).
    On SQLite ``FOR UPDATE`` compiles to nothing: its one writer excludes
    everyone."""
    locked = (
        select(jobs.c.id)
        .where(*conditions)
        .order_by(jobs.c.id)
        .with_for_update(skip_locked=skip_locked)
    )
    return jobs.c.id.in_(locked.scalar_subquery())


T = TypeVar("T")
Plan = Generator[Executable, Sequence[Any], T]  # yields a statement, is sent its rows


async def run_async(conn: AsyncConnection, plan: Plan[T]) -> T:
    """Run ``plan`` on an async connection, in the caller's transaction."""
    try:
        statement = next(plan)
        while True:
            result = await conn.execute(statement)
            statement = plan.send(result.all() if result.returns_rows else [])
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]


def run_sync(conn: Connection, plan: Plan[T]) -> T:
    """Run ``plan`` on a sync connection, in the caller's transaction."""
    try:
        statement = next(plan)
        while True:
            result = conn.execute(statement)
            statement = plan.send(result.all() if result.returns_rows else [])
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]


def _bound(column: str, values: dict[int, Any]) -> Any:
    """``CASE id WHEN … THEN value …`` with each value bound as ``column``'s type."""
    typ = jobs.c[column].type
    return case(
        {job_id: bindparam(None, value, type_=typ) for job_id, value in values.items()},
        value=jobs.c.id,
    )


def claim_plan(
    *, pool: str, limit: int, node_id: str, now: datetime, lease_ms: int, order: str
) -> Plan[list[dict[str, Any]]]:
    """pending → running for up to ``limit`` due jobs of ``pool``: the claimed
    rows (:data:`CLAIMED_COLUMNS` plus ``execution_id`` and ``started_at``)
    in claim order."""
    lease_until = now + timedelta(milliseconds=lease_ms)
    ordering = (
        (jobs.c.priority, jobs.c.run_at, jobs.c.id)
        if order == "priority"
        else (jobs.c.run_at, jobs.c.id)
    )
    candidates = yield (
        select(jobs.c.id, jobs.c.execution_timeout_ms)
        .where(
            jobs.c.pool == pool,
            jobs.c.status == JobStatus.PENDING.value,
            # not a range the planner can search: SQLite, which keeps no
            # statistics, then walks the index that has the claim's order and
            # stops after ``limit`` rows, instead of sorting every due row
            func.coalesce(jobs.c.run_at, jobs.c.run_at) <= now,
            unpaused(),
        )
        .order_by(*ordering)
        .limit(limit)
        .with_for_update(skip_locked=True)
    )
    if not candidates:
        return []
    deadlines = {int(row[0]): now + timedelta(milliseconds=row[1]) for row in candidates}
    ids = sorted(deadlines)
    leases = {job_id: min(lease_until, deadline) for job_id, deadline in deadlines.items()}
    claimed = yield (
        update(jobs)
        .where(jobs.c.id.in_(ids))
        .values(
            status=JobStatus.RUNNING.value,
            attempts=jobs.c.attempts + 1,
            lease_token=_bound("lease_token", {i: uuid.uuid4().hex for i in ids}),
            lease_owner=node_id,
            execution_deadline=_bound("execution_deadline", deadlines),
            lease_until=_bound("lease_until", leases),
            side_effect_at=None,
            updated_at=now,
        )
        .returning(*(jobs.c[name] for name in CLAIMED_COLUMNS))
    )
    rows = [dict(r._mapping) for r in claimed]
    key = ("priority", "run_at", "id") if order == "priority" else ("run_at", "id")
    rows.sort(key=lambda r: tuple(r[k] for k in key))
    started = bindparam(None, now, type_=executions.c.started_at.type)
    attempts = yield (
        executions.insert()
        .from_select(
            ["job_id", "generation", "attempt", "status", "node_id", "scheduled_at", "started_at"],
            select(
                jobs.c.id,
                jobs.c.generation,
                jobs.c.attempts,
                literal(AttemptStatus.RUNNING.value),
                literal(node_id),
                jobs.c.run_at,
                started,
            ).where(jobs.c.id.in_(ids)),
        )
        .returning(executions.c.id, executions.c.job_id)
    )
    execution_of = {int(row[1]): int(row[0]) for row in attempts}  # job id → attempt id
    for row in rows:
        row["execution_id"] = execution_of[int(row["id"])]
        row["started_at"] = now
    return rows


def settle_successes_plan(rows: Sequence[SuccessRow], now: datetime) -> Plan[set[int]]:
    """The fenced jobs → succeeded (rows locked in id order), then only their
    running attempts finished; the ids settled."""
    results = {
        r.job_id: bindparam(None, r.result, type_=JsonType) for r in rows if r.result is not None
    }
    job_values: dict[str, Any] = {
        "status": JobStatus.SUCCEEDED,
        "last_error": None,
        "last_error_code": None,
        "last_error_fingerprint": None,
        "updated_at": now,
        **CLEAR_LEASE,
    }
    if results:
        job_values["result"] = case(results, value=jobs.c.id, else_=None)
    fenced = fence_clause([(r.job_id, r.generation, r.lease_token) for r in rows])
    settled = yield (
        update(jobs)
        .where(locked_in_id_order(fenced), fenced)
        .values(**job_values)
        .returning(jobs.c.id)
    )
    ids = {int(row[0]) for row in settled}
    if not ids:
        return ids
    skipped = [r.execution_id for r in rows if r.skipped]
    attempt_status: Any = AttemptStatus.SUCCEEDED.value
    if skipped:
        attempt_status = case(
            (executions.c.id.in_(skipped), AttemptStatus.SKIPPED.value),
            else_=AttemptStatus.SUCCEEDED.value,
        )
    durations = {r.execution_id: r.duration_ms for r in rows}
    by_job = {r.job_id: r.execution_id for r in rows}
    yield (
        update(executions)
        .where(
            executions.c.id.in_([by_job[i] for i in ids]),
            executions.c.status == AttemptStatus.RUNNING.value,
        )
        .values(
            status=attempt_status,
            finished_at=now,
            duration_ms=case(durations, value=executions.c.id, else_=0),
        )
    )
    return ids
