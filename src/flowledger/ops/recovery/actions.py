"""Targeted recovery, the write side (SPEC O-18): run a recovery action.

The run computes the plan of :mod:`flowledger.ops.recovery.plan` (the same
one its preview shows) and walks it item by item, **one transaction per
item**, locking the item's instance row first (L-13) when it touches an
instance, then re-checking under the lock that the item is still what the
plan saw — a concurrent run, a worker or an operator may have fixed it in
between; then it is ``skipped`` with the reason, never done twice. Every
write goes through the ledger's and the engine's own functions:

- ``retry``: :func:`~flowledger.ops.jobs.batching.retry_checked` (the
  ledger's manual retry, refused for a suspended instance), only while the
  job is still dead or failed and not unconfirmed;
- ``wake``: the ledger driver's ``jobs_wake``;
- ``reclaim``: the ledger driver's ``jobs_reclaim``;
- ``recreate``: :func:`~flowledger.engine.recovery_steps.recreate_job` in an
  engine step, or — when the job's idempotency key is held by a canceled job
  of the task — the manual retry of that job; outbox rows through
  :func:`~flowledger.events.outbox.requeue_failed` and
  :func:`~flowledger.events.outbox.ensure_recovery_dispatch`;
- ``needs_person``: nothing (L-17: an unconfirmed outcome is never resent).

Each item done on an instance's job records the instance's
``targeted_recovery`` intervention (issue 31: ``job.<id>.status`` before →
after, the run's actor and reason) in the item's transaction
(:mod:`flowledger.engine.interventions`).

Staggering is replay's (SPEC L-24): the k-th job a run makes due (a retry or
a recreated job) is due at ``now + k / rate``. Every job a run retried or
recreated carries the run's batch id in ``replay_batch_id``, so the console
and ``flowledger recover`` follow it as they follow a replay. Outcomes per
item: ``done``, ``skipped`` (with the reason and a code: ``needs_person``,
``changed``, ``invalid_state``) or ``failed`` (with the error's code) — the
vocabulary of :mod:`flowledger.ops.batch`, whose runner walks the plan and
records the run as a batch operation under the run's batch id.

:func:`run_as` is a run as an operator's action (the API's and the CLI's),
audited ``recovery.run`` (target ``recovery`` / the action; the filter as
shown, the totals and the batch id in its detail), the row written when the
run ends (:func:`flowledger.access.audit.audited`: the items commit one by
one).

Never imports the API or the CLI.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.access.audit import AuditContext, audited
from flowledger.access.callers import Caller
from flowledger.db.database import Database
from flowledger.db.schema import workflow_jobs as jobs
from flowledger.engine import interventions
from flowledger.engine.hooks import EngineHooks
from flowledger.engine.recovery_steps import recreate_job, waiting_task
from flowledger.engine.snapshots import SnapshotCache
from flowledger.engine.step import Step, lock_instance, open_step
from flowledger.engine.store import engine_store
from flowledger.errors import FlowledgerError, InvalidStateError
from flowledger.events import outbox
from flowledger.ops.batch import (
    DONE,
    FAILED,
    SKIPPED,
    BatchRecorder,
    ItemOutcome,
    Selection,
    done,
    failed,
    skipped,
)
from flowledger.ops.jobs.batching import (
    DEFAULT_RATE,
    check_rate,
    completion_window,
    new_batch_id,
    retry_checked,
    staggered_run_at,
    stamp_batch,
)
from flowledger.ops.recovery.model import (
    NEEDS_PERSON,
    RECLAIM,
    RECREATE,
    RETRY,
    WAKE,
    PlanItem,
    RecoveryFilter,
    job_types,
)
from flowledger.ops.recovery.plan import plan_in
from flowledger.states import EXTERNAL_OUTCOME_UNCONFIRMED

Progress = Callable[[int, int], None]  # (items handled, items planned)


@dataclass(frozen=True)
class ItemResult:
    item: PlanItem
    outcome: str  # done | skipped | failed
    detail: str  # what was done, or why not
    code: str | None = None
    job_id: int | None = None  # the job retried, woken, reclaimed or created


@dataclass
class RecoveryRun:
    action: str
    batch_id: str
    rate: int
    started_at: datetime
    items: list[ItemResult] = field(default_factory=list)
    submitted: int = 0  # jobs made due (retried or recreated), staggered

    def totals(self) -> dict[str, int]:
        counts = {"total": len(self.items), DONE: 0, SKIPPED: 0, FAILED: 0}
        for result in self.items:
            counts[result.outcome] += 1
        return counts

    def window(self) -> tuple[datetime, datetime]:
        return completion_window(self.started_at, self.submitted, self.rate)


class _Skip(Exception):
    def __init__(self, detail: str, code: str = "changed") -> None:
        super().__init__(detail)
        self.detail, self.code = detail, code


async def _job_state(conn: AsyncConnection, job_id: int) -> Any:
    return (
        await conn.execute(select(jobs.c.status, jobs.c.last_error_code).where(jobs.c.id == job_id))
    ).first()


async def _statuses(conn: AsyncConnection, *job_ids: int | None) -> dict[int, str]:
    ids = [i for i in job_ids if i is not None]
    if not ids:
        return {}
    rows = await conn.execute(select(jobs.c.id, jobs.c.status).where(jobs.c.id.in_(ids)))
    return {int(r.id): str(r.status) for r in rows}


async def _has_job(conn: AsyncConnection, job_type: str, task_id: int) -> int | None:
    found = (
        await conn.execute(
            select(jobs.c.id)
            .where(jobs.c.task_id == task_id, jobs.c.type == job_type, jobs.c.status != "canceled")
            .limit(1)
        )
    ).scalar_one_or_none()
    return None if found is None else int(found)


class _Runner:
    def __init__(
        self,
        db: Database,
        run: RecoveryRun,
        *,
        now: datetime,
        snapshots: SnapshotCache,
        hooks: EngineHooks[Step],
        actor: str,
        reason: str | None = None,
    ) -> None:
        self.db, self.run, self.now, self.snapshots, self.actor = db, run, now, snapshots, actor
        self.reason = reason
        self.hooks = hooks
        self.store = engine_store(db)  # the engine's writes on this database, chosen once

    def _next_run_at(self) -> datetime:
        return staggered_run_at(self.now, self.run.submitted, self.run.rate)

    async def _submitted(self, conn: AsyncConnection, job_id: int) -> None:
        await stamp_batch(conn, self.store.ledger, [job_id], self.run.batch_id)
        self.run.submitted += 1

    async def _retry(self, conn: AsyncConnection, job_id: int, statuses: tuple[str, ...]) -> None:
        state = await _job_state(conn, job_id)
        if state is None or state.status not in statuses:
            raise _Skip(f"job {job_id} is {getattr(state, 'status', 'gone')} now")
        if state.last_error_code == EXTERNAL_OUTCOME_UNCONFIRMED:
            raise _Skip("external outcome unconfirmed (L-17): never resent", NEEDS_PERSON)
        await retry_checked(
            conn, self.store.ledger, job_id, now=self.now, run_at=self._next_run_at()
        )
        await self._submitted(conn, job_id)

    async def _recreate(self, conn: AsyncConnection, item: PlanItem) -> tuple[str, int | None]:
        if item.target == "outbox":
            assert item.outbox_id is not None
            if item.status == "failed" and not await outbox.requeue_failed(conn, [item.outbox_id]):
                raise _Skip(f"outbox row {item.outbox_id} is no longer failed")
            live = await outbox.live_dispatch_job(conn)
            job_id = await outbox.ensure_recovery_dispatch(
                conn,
                now=self.now,
                run_at=self._next_run_at(),
                batch_key=self.run.batch_id,
                ledger=self.store.ledger,
            )
            if job_id is None:
                raise _Skip(f"outbox row {item.outbox_id} is no longer pending")
            if live is None:
                await self._submitted(conn, job_id)
                return f"dispatch job {job_id} enqueued", job_id
            return f"covered by the live dispatch job {job_id}", job_id
        assert item.task_id is not None and item.instance_id is not None
        assert item.job_type is not None
        existing = await _has_job(conn, item.job_type, item.task_id)
        if existing is not None:
            raise _Skip(f"job {existing} exists for the task now")
        step = await open_step(
            conn,
            item.instance_id,
            now=self.now,
            actor=self.actor,
            snapshots=self.snapshots,
            hooks=self.hooks,
            store=self.store,
        )
        if item.canceled_job_id is not None:
            task = await waiting_task(step, item.job_type, item.task_id)
            if isinstance(task, str):
                raise _Skip(task)
            await self._retry(conn, item.canceled_job_id, ("canceled",))
            await step.trace(
                "job_recreated",
                node_key=item.node_key,
                task_id=item.task_id,
                job_id=item.canceled_job_id,
                detail={"type": item.job_type, "by": self.actor, "retried": True},
            )
            return f"canceled job {item.canceled_job_id} retried", item.canceled_job_id
        created = await recreate_job(
            step,
            item.job_type,
            item.task_id,
            run_at=self._next_run_at(),
            child_instance_id=item.child_instance_id,
        )
        if isinstance(created, str):
            raise _Skip(created)
        await self._submitted(conn, created)
        return f"{item.job_type} job {created} created", created

    async def _act(self, conn: AsyncConnection, item: PlanItem) -> tuple[str, int | None]:
        if item.action == RETRY:
            assert item.job_id is not None
            await self._retry(conn, item.job_id, ("dead", "failed"))
            return "retried: pending in a new generation", item.job_id
        if item.action == WAKE:
            assert item.job_id is not None
            if not await self.store.ledger.jobs_wake(conn, [item.job_id], now=self.now):
                raise _Skip(f"job {item.job_id} is no longer pending and due")
            return "its pool was hinted", item.job_id
        if item.action == RECLAIM:
            assert item.job_id is not None
            report = await self.store.ledger.jobs_reclaim(conn, [item.job_id], now=self.now)
            if report.retried:
                return "reclaimed: pending again", item.job_id
            if report.dead:
                return "reclaimed: dead (attempts exhausted or outcome unconfirmed)", item.job_id
            raise _Skip(f"job {item.job_id} no longer holds an expired lease")
        assert item.action == RECREATE
        return await self._recreate(conn, item)

    async def _intervention(
        self, conn: AsyncConnection, item: PlanItem, job_id: int, before: dict[int, str]
    ) -> None:
        """The item's intervention: its job's status before (None for a job
        the item created) → after."""
        assert item.instance_id is not None
        after = await _job_state(conn, job_id)
        await interventions.record(
            conn,
            item.instance_id,
            interventions.TARGETED_RECOVERY,
            actor=self.actor,
            reason=self.reason,
            changes=[
                interventions.change(
                    f"job.{job_id}.status",
                    before.get(job_id),
                    None if after is None else str(after.status),
                )
            ],
            now=self.now,
            node_key=item.node_key,
            task_id=item.task_id,
            job_id=job_id,
        )

    async def one(self, item: PlanItem) -> ItemResult:
        if item.action == NEEDS_PERSON:
            return ItemResult(item, SKIPPED, item.reason, NEEDS_PERSON, item.job_id)
        try:
            async with self.db.begin() as conn:
                on_instance = item.instance_id is not None and item.target != "outbox"
                if item.instance_id is not None and on_instance:
                    await lock_instance(conn, item.instance_id)
                before = await _statuses(conn, item.job_id, item.canceled_job_id)
                detail, job_id = await self._act(conn, item)
                if on_instance and job_id is not None:
                    await self._intervention(conn, item, job_id, before)
        except _Skip as skip:
            return ItemResult(item, SKIPPED, skip.detail, skip.code, item.job_id)
        except InvalidStateError as exc:
            return ItemResult(item, SKIPPED, exc.message, exc.code, item.job_id)
        except FlowledgerError as exc:
            return ItemResult(item, FAILED, exc.message, exc.code, item.job_id)
        return ItemResult(item, DONE, detail, None, job_id)


def _key(item: PlanItem) -> int | str:
    """A plan item's key in its batch: its job's id, else its target's."""
    if item.job_id is not None:
        return item.job_id
    if item.outbox_id is not None:
        return f"outbox:{item.outbox_id}"
    return f"{item.target}:{item.task_id}"


def _shared(result: ItemResult) -> ItemOutcome:
    key = _key(result.item)
    if result.outcome == DONE:
        return done(key)
    if result.outcome == SKIPPED:
        return skipped(key, result.detail, result.code)
    return failed(key, result.code or "internal_error", result.detail)


async def recovery_run(
    db: Database,
    action: str,
    flt: RecoveryFilter,
    *,
    now: datetime,
    snapshots: SnapshotCache,
    hooks: EngineHooks[Step],
    actor: str,
    rate: int = DEFAULT_RATE,
    batch_id: str | None = None,
    progress: Progress | None = None,
    reason: str | None = None,
) -> RecoveryRun:
    """Run ``action`` over what its plan lists now, as one recorded batch
    operation (:mod:`flowledger.ops.batch`, kind ``recovery.<action>``, its
    id the run's batch id); see the module doc."""
    job_types(action)
    check_rate(rate)
    async with db.read() as conn:
        plan = await plan_in(conn, action, flt, now=now)
    run = RecoveryRun(action, batch_id or new_batch_id(), rate, now)
    runner = _Runner(db, run, now=now, snapshots=snapshots, hooks=hooks, actor=actor, reason=reason)

    async def act(item: PlanItem) -> ItemOutcome:
        try:
            result = await runner.one(item)
        except Exception as exc:  # the item fails, the run goes on
            result = ItemResult(item, FAILED, type(exc).__name__, "internal_error", item.job_id)
        run.items.append(result)
        if progress is not None:
            progress(len(run.items), len(plan.items))
        return _shared(result)

    recorder = BatchRecorder(
        db,
        f"recovery.{action}",
        actor=actor,
        clock=lambda: now,
        reason=reason,
        tenants=flt.tenants,
        request={
            "action": action,
            "instanceId": flt.instance_id,
            "minAgeMinutes": flt.min_age_minutes,
            "limit": flt.limit,
            "rate": rate,
        },
        batch_id=run.batch_id,
    )
    await recorder.run(Selection(plan.items), act, key=_key)
    return run


async def run_as(
    ctx: AuditContext,
    caller: Caller,
    action: str,
    flt: RecoveryFilter,
    *,
    shown_filter: dict[str, Any],
    snapshots: SnapshotCache,
    hooks: EngineHooks[Step],
    rate: int = DEFAULT_RATE,
    reason: str | None = None,
    progress: Progress | None = None,
) -> RecoveryRun:
    """:func:`recovery_run` by ``caller``, audited (see the module doc);
    ``shown_filter`` is the filter as the caller gave it."""
    async with audited(ctx, caller, "recovery.run", "recovery", action, reason=reason) as e:
        job_types(action)
        e.detail["filter"] = shown_filter
        run = await recovery_run(
            ctx.db,
            action,
            flt,
            now=ctx.now(),
            snapshots=snapshots,
            hooks=hooks,
            actor=caller.user_id,
            rate=rate,
            reason=reason,
            progress=progress,
        )
        e.detail.update(run.totals(), batchId=run.batch_id, submitted=run.submitted)
    return run
