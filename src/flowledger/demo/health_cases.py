"""Demo instances that show each health-inspection rule of SPEC O-16 (and
give each targeted recovery action of O-18 something to repair), backdated
by :data:`AGE` so they are past the default 30-minute threshold.

Each case is started through the engine; where a condition arises in
production from something the demo cannot do on a laptop without a network
(a worker killed mid-call, a lost commit) the last step is a direct write
that leaves exactly the rows that event leaves — said case by case below.
Then every row of the case's instance is shifted :data:`AGE` into the past
(instance, tasks, tokens, jobs, outbox, trace), as if it had been started
two hours ago; so a delay of one hour is now an hour overdue.

=============================  ==================================================
rule                           case
=============================  ==================================================
token_task_mismatch            purchase whose approval task lost its token (a
                               crash between two writes: the token is consumed)
external_dispatch_failed       partner_review whose unsafe POST got no answer: the
                               dispatch job is the L-17 dead letter, task pending
external_dispatch_pending      partner_review whose dispatch to a refused address
                               is in backoff after two attempts, never sent
trigger_execution_failed       erp_sync whose worker died mid-PUT after the
                               side-effect marker: the drain dead-lettered it
                               (external_outcome_unconfirmed), task waiting
trigger_waiting_no_execution   erp_sync whose dispatch job was lost before it ran
subprocess_waiting             the first vendor_onboarding: its child waits for
                               frank's audit
delay_missing_wake_job         onboarding (heidi) at the cooldown delay, wake job
                               lost
delay_overdue                  onboarding (grace) at the cooldown delay, due an
                               hour ago, its wake job not yet run
task_timeout_overdue           purchase approval 25 h old: its 24 h notify timeout
                               job is due and not yet handled
waiting_task_stuck             purchase approval waiting two hours, no timeout due
workflow_event_outbox_failed   an outbox row of that purchase whose fan-out failed
workflow_event_outbox_pending  every backdated case's other outbox rows
instance_stalled               routing_gap (latam): the exclusive gateway matched
                               no edge; no task, no job
webhook_delivery_failed        a purchase whose ``instance.started`` event's
                               webhook to a partner was cut off after the POST
                               was sent: the delivery job is the L-17 dead
                               letter (external_outcome_unconfirmed). The
                               partner's subscription was disabled since (its
                               receiver is gone), so it matches no other event,
                               and a replay settles the delivery as skipped
                               (L-4) without sending anything
=============================  ==================================================

The ``delay_overdue``, ``task_timeout_overdue``, ``external_dispatch_pending``
and ``workflow_event_outbox_pending`` cases are due work: a running worker
(``flowledger run``) clears them within seconds, as it should; the others
persist until someone repairs them (force jump, ``flowledger recover``, a
job retry).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from cryptography.fernet import Fernet
from sqlalchemy import Table, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db.engine_schema import (
    workflow_event_outbox,
    workflow_instances,
    workflow_tasks,
    workflow_tokens,
    workflow_trace,
)
from flowledger.db.schema import workflow_jobs
from flowledger.engine import Engine
from flowledger.events import hits
from flowledger.events.subscriptions import create_subscription
from flowledger.events.webhooks import WEBHOOK_DELIVERY, WEBHOOK_DELIVERY_TYPE, delivery_payload
from flowledger.ledger.driver import forge
from flowledger.ledger.driver.protocol import LedgerDriver
from flowledger.ledger.models import JobSpec
from flowledger.outbound.secrets import SecretBox
from flowledger.states import EXTERNAL_OUTCOME_UNCONFIRMED

AGE = timedelta(hours=2)

_SHIFTED: list[tuple[Table, tuple[str, ...], str]] = [
    (workflow_instances, ("created_at", "updated_at"), "id"),
    (workflow_tasks, ("created_at", "due_at"), "instance_id"),
    (workflow_tokens, ("created_at",), "instance_id"),
    (workflow_event_outbox, ("created_at",), "instance_id"),
    (workflow_trace, ("created_at",), "instance_id"),
]


async def _backdate(conn: AsyncConnection, instance_id: int, age: timedelta) -> None:
    """Shift every timestamp of the instance's rows ``age`` into the past."""
    for table, columns, key in _SHIFTED:
        rows = (
            await conn.execute(
                select(table.c.id, *(table.c[c] for c in columns)).where(
                    table.c[key] == instance_id
                )
            )
        ).all()
        for row in rows:
            values = {c: getattr(row, c) - age for c in columns if getattr(row, c) is not None}
            if values:
                await conn.execute(update(table).where(table.c.id == row.id).values(**values))
    await forge.jobs_backdate(conn, instance_id, age)


async def _job(conn: AsyncConnection, instance_id: int, job_type: str) -> Any:
    return (
        await conn.execute(
            select(workflow_jobs).where(
                workflow_jobs.c.instance_id == instance_id, workflow_jobs.c.type == job_type
            )
        )
    ).first()


async def _lose_job(conn: AsyncConnection, instance_id: int, job_type: str) -> None:
    await forge.job_forget(conn, (await _job(conn, instance_id, job_type)).id)


async def _handle_all(engine: Engine, instance_id: int, *nodes: str) -> None:
    async with engine.db.read() as conn:
        ids = (
            await conn.execute(
                select(workflow_tasks.c.id).where(
                    workflow_tasks.c.instance_id == instance_id,
                    workflow_tasks.c.node_key.in_(nodes),
                    workflow_tasks.c.status == "pending",
                )
            )
        ).scalars()
        task_ids = list(ids)
    for task_id in task_ids:
        await engine.handle(task_id, actor="dave")


async def _unconfirmed(conn: AsyncConnection, job: Any, now: Any, error: str) -> None:
    """What the drain leaves when the executor of an unsafe call died after
    its side-effect marker (L-17): the attempt failed, the job dead."""
    await forge.attempt_forge(
        conn,
        job_id=job.id,
        generation=job.generation,
        attempt=1,
        status="failed",
        node_id="demo-worker:4242",
        scheduled_at=job.run_at,
        started_at=now,
        finished_at=now,
        error=error,
        error_code=EXTERNAL_OUTCOME_UNCONFIRMED,
        side_effect_at=now,
    )
    await forge.job_forge(
        conn,
        job.id,
        status="dead",
        attempts=1,
        side_effect_at=now,
        last_error=error,
        last_error_code=EXTERNAL_OUTCOME_UNCONFIRMED,
        updated_at=now,
    )


async def _dead_webhook(
    conn: AsyncConnection, ledger: LedgerDriver, instance_id: int, now: Any, error: str
) -> None:
    """A demo subscription hit by the instance's first event, whose
    ``webhook_delivery`` job (enqueued as ``event_dispatch`` does) then dies
    as the L-17 dead letter: what a receiver that took the POST and never
    answered leaves. The subscription is disabled (the relay matches no
    other event to it; a replay is skipped), its secret sealed with a
    throwaway key (nothing is ever signed with it)."""
    row = (
        (
            await conn.execute(
                select(workflow_event_outbox)
                .where(workflow_event_outbox.c.instance_id == instance_id)
                .order_by(workflow_event_outbox.c.id)
            )
        )
        .mappings()
        .first()
    )
    if row is None:
        return
    event: dict[str, Any] = dict(row)
    box = SecretBox([Fernet.generate_key().decode()])
    subscription, _secret = await create_subscription(
        conn,
        tenant=event["tenant_id"],
        name="partner ledger (demo)",
        event_types=[event["event_type"]],
        target_url="https://192.0.2.30/hooks",
        actor="demo",
        now=now,
        definition_key=event["definition_key"],
        enabled=False,
        box=box,
    )
    hit_id = await hits.record_hit(conn, subscription_id=subscription["id"], event=event, now=now)
    assert hit_id is not None
    job = await ledger.job_insert(
        conn,
        JobSpec(
            type=WEBHOOK_DELIVERY_TYPE,
            payload=delivery_payload(event, subscription_id=subscription["id"], hit_id=hit_id),
            idempotency_key=f"{WEBHOOK_DELIVERY}:{hit_id}",
            tenant_id=event["tenant_id"],
            instance_id=instance_id,
        ),
        now=now,
    )
    await hits.attach_job(conn, hit_id, job.job_id)
    await hits.set_hit_status(conn, hit_id, hits.FAILED, now=now, error=error)
    await _unconfirmed(conn, await _job(conn, instance_id, WEBHOOK_DELIVERY), now, error)


async def load_health_cases(engine: Engine) -> list[int]:
    """Start and shape the cases of the module doc; returns their instances."""
    now = engine.clock.now()
    cases: list[tuple[int, timedelta]] = []

    def case(instance_id: int, age: timedelta = AGE) -> int:
        cases.append((instance_id, age))
        return instance_id

    form = {"amount": 800, "vendor": "Vandelay", "reason": "health demo"}
    mismatch = case(await engine.start("purchase", form=form, initiator="dave"))
    stuck = case(await engine.start("purchase", form=form, initiator="dave"))
    hooked = case(await engine.start("purchase", form=form, initiator="frank"))
    case(await engine.start("purchase", form=form, initiator="erin"), timedelta(hours=25))
    unconfirmed_partner = case(
        await engine.start("partner_review", form={"item": "contract 17"}, initiator="carol")
    )
    pending_partner = case(
        await engine.start("partner_review", form={"item": "contract 18"}, initiator="carol")
    )
    unconfirmed_push = case(
        await engine.start("erp_sync", form={"orderId": "SO-2001"}, initiator="bob")
    )
    lost_push = case(await engine.start("erp_sync", form={"orderId": "SO-2002"}, initiator="bob"))
    missing_wake = case(
        await engine.start("onboarding", form={"employee": "heidi"}, initiator="erin")
    )
    overdue_wake = case(
        await engine.start("onboarding", form={"employee": "grace"}, initiator="erin")
    )
    for iid in (missing_wake, overdue_wake):
        await _handle_all(engine, iid, "it", "hr")
    async with engine.db.begin() as conn:
        for key, region in (("vendor_onboarding", None), ("routing_gap", "latam")):
            rows = (
                await conn.execute(
                    select(workflow_instances.c.id, workflow_instances.c.form_data)
                    .where(workflow_instances.c.definition_key == key)
                    .order_by(workflow_instances.c.id)
                )
            ).all()
            found = [r.id for r in rows if region is None or r.form_data.get("region") == region]
            if found:
                case(int(found[0]))
        # token_task_mismatch: the approval task's token is gone
        await conn.execute(
            update(workflow_tokens)
            .where(workflow_tokens.c.instance_id == mismatch, workflow_tokens.c.state == "active")
            .values(state="consumed", consumed_at=now)
        )
        # external_dispatch_failed / trigger_execution_failed: the L-17 dead letter
        error = "lease expired: the executor stopped renewing during the unsafe call"
        for iid, job_type in (
            (unconfirmed_partner, "external_dispatch"),
            (unconfirmed_push, "trigger_dispatch"),
        ):
            await _unconfirmed(conn, await _job(conn, iid, job_type), now, error)
        # external_dispatch_pending: two refused attempts, in backoff
        job = await _job(conn, pending_partner, "external_dispatch")
        await forge.job_forge(
            conn,
            job.id,
            attempts=2,
            run_at=now + timedelta(minutes=15) + AGE,
            last_error="connection refused by 192.0.2.20:443",
            last_error_code="retryable",
            updated_at=now,
        )
        # lost jobs: trigger_waiting_no_execution and delay_missing_wake_job
        await _lose_job(conn, lost_push, "trigger_dispatch")
        await _lose_job(conn, missing_wake, "delay_wake")
        # workflow_event_outbox_failed: one of the stuck purchase's events
        first_event = (
            await conn.execute(
                select(workflow_event_outbox.c.id)
                .where(workflow_event_outbox.c.instance_id == stuck)
                .order_by(workflow_event_outbox.c.id)
            )
        ).scalar()
        if first_event is not None:
            await conn.execute(
                update(workflow_event_outbox)
                .where(workflow_event_outbox.c.id == first_event)
                .values(status="failed", dispatched_at=now)
            )
        # webhook_delivery_failed: the delivery of an event dead-lettered (L-17)
        await _dead_webhook(
            conn, engine.store.ledger, hooked, now, "no answer after the POST was sent"
        )
        for iid, age in cases:
            await _backdate(conn, iid, age)
    return [iid for iid, _age in cases]
