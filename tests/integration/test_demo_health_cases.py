"""The demo's health cases (issue 11 item 7, SPEC O-16, O-18): right after
``load_demo`` every inspection rule has at least one instance whose rows meet
the rule's condition, older than the default 30-minute threshold, and the
targeted recovery actions find the repairable ones (and leave the L-17
dead letters to a person). Checked on the rows themselves, so the test does
not depend on the inspection's implementation."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from sqlalchemy import and_, exists, select

from flowledger.clock import ManualClock
from flowledger.db.database import Database
from flowledger.db.engine_schema import workflow_event_outbox as outbox
from flowledger.db.engine_schema import workflow_instances as instances
from flowledger.db.engine_schema import workflow_tasks as tasks
from flowledger.db.engine_schema import workflow_tokens as tokens
from flowledger.db.schema import workflow_jobs as jobs
from flowledger.demo import load_demo
from flowledger.ops.recovery.model import RecoveryFilter
from flowledger.ops.recovery.plan import recovery_preview
from tests.integration.engine_helpers import run_due_jobs
from tests.runtime_support import default_engine

THRESHOLD = timedelta(minutes=30)


def _job_of_task(job_type: str, *statuses: str) -> Any:
    where = [jobs.c.task_id == tasks.c.id, jobs.c.type == job_type]
    if statuses:
        where.append(jobs.c.status.in_(statuses))
    return exists().where(and_(*where))


async def _tasks(db: Database, *where: Any) -> list[Any]:
    query = (
        select(tasks.c.id, tasks.c.instance_id, tasks.c.node_key)
        .select_from(tasks.join(instances, instances.c.id == tasks.c.instance_id))
        .where(instances.c.status == "running", *where)
    )
    async with db.read() as conn:
        return list((await conn.execute(query)).all())


async def _conditions(db: Database, now: Any) -> dict[str, int]:
    old = now - THRESHOLD
    active_token = exists().where(tokens.c.id == tasks.c.token_id, tokens.c.state == "active")
    due = {
        "token_task_mismatch": await _tasks(
            db, tasks.c.status == "pending", tasks.c.created_at <= old, ~active_token
        ),
        "external_dispatch_failed": await _tasks(
            db,
            tasks.c.kind == "external_approval",
            tasks.c.status == "pending",
            _job_of_task("external_dispatch", "dead", "failed"),
        ),
        "external_dispatch_pending": await _tasks(
            db,
            tasks.c.kind == "external_approval",
            tasks.c.status == "pending",
            tasks.c.created_at <= old,
            _job_of_task("external_dispatch", "pending"),
        ),
        "trigger_execution_failed": await _tasks(
            db,
            tasks.c.kind == "trigger",
            tasks.c.status == "waiting",
            _job_of_task("trigger_dispatch", "dead", "failed"),
        ),
        "trigger_waiting_no_execution": await _tasks(
            db,
            tasks.c.kind == "trigger",
            tasks.c.status == "waiting",
            tasks.c.created_at <= old,
            ~_job_of_task("trigger_dispatch"),
        ),
        "subprocess_waiting": await _tasks(
            db, tasks.c.kind == "subprocess", tasks.c.status == "waiting", tasks.c.created_at <= old
        ),
        "delay_missing_wake_job": await _tasks(
            db,
            tasks.c.kind == "delay",
            tasks.c.status == "waiting",
            ~_job_of_task("delay_wake", "pending", "running", "paused"),
        ),
        "delay_overdue": await _tasks(
            db,
            tasks.c.kind == "delay",
            tasks.c.status == "waiting",
            exists().where(
                jobs.c.task_id == tasks.c.id,
                jobs.c.type == "delay_wake",
                jobs.c.status == "pending",
                jobs.c.run_at <= old,
            ),
        ),
        "task_timeout_overdue": await _tasks(
            db,
            tasks.c.status == "pending",
            exists().where(
                jobs.c.task_id == tasks.c.id,
                jobs.c.type == "task_timeout",
                jobs.c.status == "pending",
                jobs.c.run_at <= old,
            ),
        ),
        "waiting_task_stuck": await _tasks(
            db,
            tasks.c.kind.in_(["approval", "handle"]),
            tasks.c.status == "pending",
            tasks.c.created_at <= old,
            tasks.c.due_at > now,
            active_token,
        ),
    }
    counts = {rule: len(rows) for rule, rows in due.items()}
    async with db.read() as conn:
        for status in ("failed", "pending"):
            counts[f"workflow_event_outbox_{status}"] = len(
                (
                    await conn.execute(
                        select(outbox.c.id).where(
                            outbox.c.status == status, outbox.c.created_at <= old
                        )
                    )
                ).all()
            )
        open_task = exists().where(
            tasks.c.instance_id == instances.c.id, tasks.c.status.in_(["pending", "waiting"])
        )
        live_job = exists().where(
            jobs.c.instance_id == instances.c.id,
            jobs.c.status.in_(["pending", "running", "paused"]),
        )
        stalled = (
            await conn.execute(
                select(instances.c.id).where(
                    instances.c.status == "running",
                    instances.c.updated_at <= old,
                    ~open_task,
                    ~live_job,
                )
            )
        ).all()
        counts["instance_stalled"] = len(stalled)
        dead_deliveries = (
            await conn.execute(
                select(jobs.c.instance_id).where(
                    jobs.c.type == "webhook_delivery",
                    jobs.c.status == "dead",
                    jobs.c.last_error_code == "external_outcome_unconfirmed",
                )
            )
        ).all()
        counts["webhook_delivery_failed"] = len(dead_deliveries)
    return counts


async def test_demo_shows_every_health_rule_O16(db: Database, clock: ManualClock) -> None:
    engine = default_engine(db, clock)
    await load_demo(engine)
    counts = await _conditions(db, clock.now())
    assert all(n >= 1 for n in counts.values()), counts
    assert len(counts) == 14

    # the targeted recovery actions find the repairable cases
    now = clock.now()
    every = RecoveryFilter()
    delay = await recovery_preview(db, "delay-wake", every, now=now)
    assert ("recreate", "delay_wake") in {(i.action, i.job_type) for i in delay.items}
    trigger = await recovery_preview(db, "trigger-dispatch", every, now=now)
    assert {"recreate", "needs_person"} <= {i.action for i in trigger.items}
    external = await recovery_preview(db, "external-dispatch", every, now=now)
    assert "needs_person" in {i.action for i in external.items}
    events = await recovery_preview(db, "event-dispatch", every, now=now)
    assert any(i.target == "outbox" and i.status == "failed" for i in events.items)

    # the due work clears; the conditions only a person or a recovery repairs stay
    await run_due_jobs(db, clock)
    after = await _conditions(db, clock.now())
    for rule in (
        "token_task_mismatch",
        "external_dispatch_failed",
        "trigger_execution_failed",
        "trigger_waiting_no_execution",
        "subprocess_waiting",
        "delay_missing_wake_job",
        "waiting_task_stuck",
        "workflow_event_outbox_failed",
        "instance_stalled",
        "webhook_delivery_failed",
    ):
        assert after[rule] >= 1, (rule, after)
    assert after["delay_overdue"] == 0 and after["task_timeout_overdue"] == 0
