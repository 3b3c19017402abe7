"""Small helpers shared by the ledger integration tests (SPEC L-1 … L-22).

Every helper opens its own transaction through the public ``Database`` API and
takes an explicit ``now`` (tests pass ``clock.now()``), so no helper sleeps or
reads the wall clock.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import func, select, update

from flowledger.db.database import Database
from flowledger.db.schema import workflow_job_effects as effects
from flowledger.db.schema import workflow_job_executions as executions
from flowledger.db.schema import workflow_jobs as jobs
from flowledger.handlers import BUILTIN_JOB_TYPES
from flowledger.ledger.models import ClaimedJob, EnqueueResult, JobSpec, Outcome, RescueReport
from flowledger.ledger.types import JobType, JobTypeRegistry
from flowledger.states import Pool
from tests.ledger_access import ledger_of

LEDGER = Pool.LEDGER.value
OUTBOUND = Pool.OUTBOUND.value

# A test type in the advancement pool with a small, known budget.
TEST_TYPE = JobType("it_ledger_job", LEDGER, max_attempts=3)
# A test type whose budget is large enough to walk the whole backoff ladder.
LONG_TYPE = JobType("it_ledger_long", LEDGER, max_attempts=10)
# A test type in the outbound pool.
OUT_TYPE = JobType("it_ledger_out", OUTBOUND, max_attempts=3)
# what the helpers resolve a type given by name with: the test types and flowledger's own
TEST_JOB_TYPES = JobTypeRegistry([*BUILTIN_JOB_TYPES, TEST_TYPE, LONG_TYPE, OUT_TYPE])


async def add_job(db: Database, now: datetime, type: str | JobType = TEST_TYPE, **spec: Any) -> int:
    """Enqueue one job in its own committed transaction; return its id."""
    return (await add_job_result(db, now, type, **spec)).job_id


async def add_job_result(
    db: Database, now: datetime, type: str | JobType = TEST_TYPE, **spec: Any
) -> EnqueueResult:
    async with db.begin() as conn:
        return await ledger_of(conn).job_insert(
            conn, JobSpec(type=type, **spec), now=now, job_types=TEST_JOB_TYPES
        )


async def claim(
    db: Database,
    now: datetime,
    *,
    pool: str = LEDGER,
    limit: int = 10,
    order: str = "priority",
    node: str = "node-a",
) -> list[ClaimedJob]:
    return await ledger_of(db).jobs_claim(
        db, pool=pool, limit=limit, node_id=node, now=now, order=order
    )


async def claim_one(db: Database, now: datetime, **kw: Any) -> ClaimedJob:
    claimed = await claim(db, now, limit=1, **kw)
    assert len(claimed) == 1, claimed
    return claimed[0]


async def settle_batch(
    db: Database, items: Sequence[tuple[ClaimedJob, Outcome]], now: datetime
) -> set[int]:
    return await ledger_of(db).jobs_settle(db, items, now=now)


async def settle_single(db: Database, job: ClaimedJob, outcome: Outcome, now: datetime) -> bool:
    async with db.begin() as conn:
        return await ledger_of(conn).job_settle(
            conn, job.fence, outcome, now=now, started_at=job.started_at
        )


async def rescue(db: Database, now: datetime) -> RescueReport:
    async with db.begin() as conn:
        return await ledger_of(conn).jobs_rescue(conn, now=now)


async def job_row(db: Database, job_id: int) -> Any:
    async with db.read() as conn:
        row = (await conn.execute(select(jobs).where(jobs.c.id == job_id))).one()
    return row


async def attempt_rows(db: Database, job_id: int) -> list[Any]:
    async with db.read() as conn:
        result = await conn.execute(
            select(executions).where(executions.c.job_id == job_id).order_by(executions.c.id)
        )
        return list(result.all())


async def effect_rows(db: Database, operation_key: str | None = None) -> list[Any]:
    stmt = select(effects).order_by(effects.c.id)
    if operation_key is not None:
        stmt = stmt.where(effects.c.operation_key == operation_key)
    async with db.read() as conn:
        return list((await conn.execute(stmt)).all())


async def count_rows(db: Database, table: Any) -> int:
    async with db.read() as conn:
        return int((await conn.execute(select(func.count()).select_from(table))).scalar_one())


async def force_status(db: Database, job_id: int, status: str, **values: Any) -> None:
    """Put a job into a state no ledger call reaches directly (e.g. ``failed``)."""
    async with db.begin() as conn:
        await conn.execute(update(jobs).where(jobs.c.id == job_id).values(status=status, **values))
