"""A step's transaction runs its statements by their generic plans on
PostgreSQL (engine/store/generic_plans.py): its first statement — the
instance lock that reserves the step's ids, or a job step's fenced lock —
sets ``plan_cache_mode`` for that transaction only, so the next
transaction on the pooled connection (a console read) plans as PostgreSQL
chooses. SQLite has no plan cache: its lock is the plain lock."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import insert, text

from flowledger.db.database import Database
from flowledger.db.engine_schema import workflow_definitions, workflow_instances
from flowledger.db.schema import workflow_jobs
from flowledger.engine.store import engine_store
from flowledger.engine.store.job_lock import INSTANCE_LOCK, pg_job_step_lock
from flowledger.ledger.models import Fence

NOW = datetime(2026, 12, 7, 4, 0, tzinfo=UTC)


async def _instance(db: Database) -> int:
    async with db.begin() as conn:
        definition_id = (
            await conn.execute(
                insert(workflow_definitions)
                .values(
                    tenant_id="t",
                    key="d",
                    version=1,
                    name="d",
                    source={"key": "d"},
                    deployed_by="t",
                    deployed_at=NOW,
                )
                .returning(workflow_definitions.c.id)
            )
        ).scalar_one()
        return int(
            (
                await conn.execute(
                    insert(workflow_instances)
                    .values(
                        tenant_id="t",
                        trace_id="trace",
                        snapshot={"nodes": []},
                        definition_id=definition_id,
                        definition_key="d",
                        definition_version=1,
                        status="running",
                        form_data={},
                        initiator="u",
                        created_at=NOW,
                        updated_at=NOW,
                    )
                    .returning(workflow_instances.c.id)
                )
            ).scalar_one()
        )


async def _mode(conn: object) -> str:
    return str((await conn.execute(text("SELECT current_setting('plan_cache_mode')"))).scalar_one())  # type: ignore[attr-defined]


async def test_a_steps_first_lock_sets_generic_plans_for_its_transaction(db: Database) -> None:
    instance_id = await _instance(db)
    store = engine_store(db)
    lock = store.lock_reserving(INSTANCE_LOCK)
    if db.is_sqlite:
        assert lock is INSTANCE_LOCK  # nothing reserved, nothing set
        return
    async with db.begin() as conn:
        assert await _mode(conn) == "auto"
        row = (await conn.execute(lock, {"lock_instance_id": instance_id})).mappings().one()
        assert row["id"] == instance_id
        assert await _mode(conn) == "force_generic_plan"
    async with db.begin() as conn:  # the next transaction on the pool: PostgreSQL's choice
        assert await _mode(conn) == "auto"


async def test_a_job_steps_fenced_lock_sets_them(db: Database) -> None:
    if db.is_sqlite:
        pytest.skip("the fenced lock with the instance is one statement on PostgreSQL only")
    instance_id = await _instance(db)
    async with db.begin() as conn:
        job_id = (
            await conn.execute(
                insert(workflow_jobs)
                .values(
                    type="delay_wake",
                    pool="workflow-ledger",
                    status="running",
                    payload={},
                    tenant_id="t",
                    instance_id=instance_id,
                    priority=100,
                    run_at=NOW,
                    attempts=1,
                    max_attempts=3,
                    execution_timeout_ms=300_000,
                    operation_key="op",
                    trace_id="trace",
                    generation=1,
                    lease_token="lease",
                    lease_owner="node",
                    lease_until=NOW + timedelta(minutes=5),
                    execution_deadline=NOW + timedelta(minutes=5),
                    created_at=NOW,
                    updated_at=NOW,
                )
                .returning(workflow_jobs.c.id)
            )
        ).scalar_one()
    fence = Fence(
        job_id=int(job_id),
        generation=1,
        lease_token="lease",
        execution_id=1,
        execution_started_at=NOW,
    )
    async with db.begin() as conn:
        locked = await pg_job_step_lock(conn, instance_id, fence, "op", "step", now=NOW)
        assert locked.instance is not None and locked.instance["id"] == instance_id
        assert await _mode(conn) == "force_generic_plan"
    async with db.begin() as conn:
        assert await _mode(conn) == "auto"
