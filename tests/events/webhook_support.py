"""Shared pieces of the event and webhook tests (SPEC X-5): a Fernet key for
the process (so subscription secrets encrypt without touching a key file),
two small definitions, subscriptions written through
:mod:`flowledger.events.subscriptions`, and a driver that does what a
worker does — run the outbox relay, then every due job through the real
handlers (claim → handler → settle) — until nothing is left.

Test modules pick up the real HTTP receivers and their allow-list from
tests/outbound by assigning the fixtures (``receiver = outbound.receiver``).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Any

import pytest
from cryptography.fernet import Fernet
from sqlalchemy import select, update

from flowledger.clock import ManualClock
from flowledger.db.database import Database
from flowledger.db.engine_schema import workflow_event_outbox
from flowledger.db.event_schema import workflow_event_subscriptions, workflow_subscription_hits
from flowledger.db.schema import workflow_job_executions, workflow_jobs
from flowledger.engine import Engine
from flowledger.events.relay import EventRelay
from flowledger.events.subscriptions import create_subscription
from flowledger.states import Pool
from flowledger.worker.context import JobContext
from flowledger.worker.executor import execute
from tests.integration.engine_helpers import END, START, approval, definition, run_due_jobs
from tests.ledger_access import ledger_of
from tests.outbound import conftest as outbound  # noqa: F401  (fixtures for test modules)
from tests.runtime_support import default_engine, handler_for, process_secrets

LEAVE = definition(
    "leave", [START, approval("manager", "mia"), END], [("start", "manager"), ("manager", "end")]
)
EXPENSE = definition(
    "expense", [START, approval("check", "max"), END], [("start", "check"), ("check", "end")]
)


@pytest.fixture
def secret_key(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A fresh Fernet key in FLOWLEDGER_SECRET_KEY for the secret box."""
    key = Fernet.generate_key().decode()
    monkeypatch.setenv("FLOWLEDGER_SECRET_KEY", key)
    yield key


async def deployed_engine(db: Database, clock: ManualClock) -> Engine:
    engine = default_engine(db, clock)
    await engine.deploy(LEAVE, actor="test")
    await engine.deploy(EXPENSE, actor="test")
    return engine


async def subscribe(
    db: Database,
    clock: ManualClock,
    url: str,
    *,
    event_types: tuple[str, ...] = ("*",),
    tenant: str = "default",
    definition_key: str | None = None,
    enabled: bool = True,
    secret: str | None = None,
) -> tuple[int, str]:
    """A subscription; returns its id and its plain secret."""
    async with db.begin() as conn:
        row, generated = await create_subscription(
            conn,
            tenant=tenant,
            name="hook",
            event_types=event_types,
            target_url=url,
            definition_key=definition_key,
            secret=secret,
            enabled=enabled,
            actor="test",
            now=clock.now(),
            box=process_secrets(),
        )
    plain = secret or generated
    assert plain is not None
    return int(row["id"]), plain


async def set_subscription(db: Database, subscription_id: int, **values: Any) -> None:
    async with db.begin() as conn:
        await conn.execute(
            update(workflow_event_subscriptions)
            .where(workflow_event_subscriptions.c.id == subscription_id)
            .values(**values)
        )


async def relay(db: Database, clock: ManualClock) -> int | None:
    return await EventRelay(db, clock).relay_once()


async def dispatch_all(db: Database, clock: ManualClock) -> int:
    """Relay and run due jobs until neither finds anything; returns jobs run."""
    total = 0
    for _ in range(20):
        await relay(db, clock)
        ran = await run_due_jobs(db, clock)
        if ran == 0:
            return total
        total += ran
    raise AssertionError("events kept coming")


async def run_one_outbound(db: Database, clock: ManualClock) -> str:
    """Claim and run exactly one due outbound job; returns its type."""
    (job,) = await ledger_of(db).jobs_claim(
        db, pool=Pool.OUTBOUND, limit=1, node_id="test-node", now=clock.now()
    )
    outcome = await execute(
        JobContext(job, db, clock), handler_for(db, clock, job.type), abort_grace_s=1.0
    )
    assert outcome is not None
    await ledger_of(db).jobs_settle(db, [(job, outcome)], now=clock.now())
    return job.type


async def rows(db: Database, query: Any) -> list[dict[str, Any]]:
    async with db.read() as conn:
        return [dict(r) for r in (await conn.execute(query)).mappings().all()]


async def outbox(db: Database) -> list[dict[str, Any]]:
    t = workflow_event_outbox
    return await rows(db, select(t).order_by(t.c.id))


async def hits(db: Database, subscription_id: int | None = None) -> list[dict[str, Any]]:
    t = workflow_subscription_hits
    query = select(t).order_by(t.c.id)
    if subscription_id is not None:
        query = query.where(t.c.subscription_id == subscription_id)
    return await rows(db, query)


async def jobs_of(db: Database, job_type: str) -> list[dict[str, Any]]:
    t = workflow_jobs
    return await rows(db, select(t).where(t.c.type == job_type).order_by(t.c.id))


async def attempts(db: Database, job_id: int) -> list[dict[str, Any]]:
    t = workflow_job_executions
    return await rows(db, select(t).where(t.c.job_id == job_id).order_by(t.c.id))


async def add_outbox_row(
    db: Database, now: datetime, *, event_type: str = "custom.event", payload: Any = None
) -> int:
    """An outbox row written directly (no instance), as another producer might."""
    async with db.begin() as conn:
        result = await conn.execute(
            workflow_event_outbox.insert()
            .values(
                tenant_id="default",
                instance_id=None,
                definition_key=None,
                event_type=event_type,
                payload={} if payload is None else payload,
                status="pending",
                trace_id="t-direct",
                created_at=now,
            )
            .returning(workflow_event_outbox.c.id)
        )
        return int(result.scalar_one())
