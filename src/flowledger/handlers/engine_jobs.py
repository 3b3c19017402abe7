"""Handlers of the engine's advancement jobs (SPEC L-2 pool
``workflow-ledger``): ``delay_wake``, ``task_timeout``, ``subprocess_spawn``,
``subprocess_join`` and ``schedule_launch``. Each runs its engine step inside
a fenced step receipt with the instance row locked first (L-13, L-14;
``schedule_launch`` has no instance yet), and the step settles its attempt in
the same transaction: the job is succeeded
(or skipped) exactly when the instance moved, so the cleanup of an instance
that a sibling job's step ends (L-22) never cancels a job whose work is
already done. A retry of the same operation (a manual one, a new
generation) reuses the receipt instead of advancing the instance twice."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.actions.runner import SYSTEM_ACTOR, outcome
from flowledger.engine import async_steps, schedules
from flowledger.engine.facade import Engine
from flowledger.engine.instances import start_instance
from flowledger.engine.job_types import engine_job_type
from flowledger.engine.step import JobStepLock, JobStepSettlement, Step
from flowledger.errors import PermanentError
from flowledger.worker import JobContext
from flowledger.worker.registry import Handler, HandlerFn, define_handler


async def _instance_step(
    ctx: JobContext,
    engine: Engine,
    instance_id: int,
    body: Callable[[Step], Awaitable[Any]],
    *,
    lock: JobStepLock | None = None,
    now: datetime | None = None,
) -> Any:
    """``body`` in an engine step on the instance, run in the job's fenced
    step receipt with ``lock`` (default: the instance row alone) taken
    first; the step's clock reading is ``now`` (default: read here)."""
    held = lock if lock is not None else JobStepLock(engine.store, instance_id)

    async def run(conn: AsyncConnection) -> Any:
        step = await engine.open_step(
            conn,
            instance_id,
            actor=SYSTEM_ACTOR,
            now=ctx.clock.now() if now is None else now,
            job_id=ctx.job.id,
            locked=held.row,
        )
        return await body(step)

    # the step settles its job; its store writes the step's rows with that settlement
    settlement = JobStepSettlement(engine.store)
    return outcome(
        await ctx.step(ctx.job.type, run, lock_first=held, completes=outcome, settlement=settlement)
    )


def _ids(ctx: JobContext) -> tuple[int, int]:
    if ctx.job.instance_id is None or "taskId" not in ctx.payload:
        raise PermanentError(f"{ctx.job.type} job {ctx.job.id} names no instance or task")
    return ctx.job.instance_id, int(ctx.payload["taskId"])


def _skip_or_done(reason: str | None) -> dict[str, Any]:
    return {"skipped": reason} if reason else {"done": True}


async def delay_wake(ctx: JobContext, engine: Engine) -> Any:
    instance_id, task_id = _ids(ctx)
    now = ctx.clock.now()  # the task's finish and the step share one reading
    lock = async_steps.wake_lock(engine.store, instance_id, task_id, now=now)

    async def body(step: Step) -> dict[str, Any]:
        return _skip_or_done(await async_steps.wake_delay(step, task_id, lock))

    return await _instance_step(ctx, engine, instance_id, body, lock=lock, now=now)


async def task_timeout(ctx: JobContext, engine: Engine) -> Any:
    instance_id, task_id = _ids(ctx)

    raw = ctx.payload.get("deadlineStep")
    deadline_step = None if raw is None else int(raw)

    async def body(step: Step) -> dict[str, Any]:
        return _skip_or_done(await async_steps.task_timed_out(step, task_id, deadline_step))

    return await _instance_step(ctx, engine, instance_id, body)


async def subprocess_spawn(ctx: JobContext, engine: Engine) -> Any:
    instance_id, task_id = _ids(ctx)
    snapshots = engine.snapshots

    async def body(step: Step) -> dict[str, Any]:
        child = await async_steps.spawn_child(step, task_id, snapshots=snapshots)
        return {"skipped": child} if isinstance(child, str) else {"childInstanceId": child}

    return await _instance_step(ctx, engine, instance_id, body)


async def subprocess_join(ctx: JobContext, engine: Engine) -> Any:
    instance_id, task_id = _ids(ctx)
    child = int(ctx.payload["childInstanceId"])

    async def body(step: Step) -> dict[str, Any]:
        return _skip_or_done(await async_steps.join_child(step, task_id, child))

    return await _instance_step(ctx, engine, instance_id, body)


async def schedule_launch(ctx: JobContext, engine: Engine) -> Any:
    schedule_id = int(ctx.payload["scheduleId"])

    async def run(conn: AsyncConnection) -> dict[str, Any]:
        schedule = await schedules.get_schedule(conn, schedule_id)
        if not schedule["enabled"] and not ctx.payload.get("manual"):
            return {"skipped": "schedule disabled"}
        instance_id = await start_instance(
            conn,
            schedule["definition_key"],
            form=schedule["form"],
            initiator=schedule["initiator"],
            tenant=schedule["tenant_id"],
            now=ctx.clock.now(),
            snapshots=engine.snapshots,
            hooks=engine.hooks,
            store=engine.store,
            trace_id=ctx.job.trace_id,
        )
        return {"instanceId": instance_id}

    settlement = JobStepSettlement(engine.store)
    return outcome(await ctx.step("schedule_launch", run, completes=outcome, settlement=settlement))


EngineJobFn = Callable[[JobContext, Engine], Awaitable[Any]]


def bind(engine: Engine, fn: EngineJobFn) -> HandlerFn:
    """``fn`` as a handler that runs with ``engine``."""

    async def handler(ctx: JobContext) -> Any:
        return await fn(ctx, engine)

    handler.__name__ = getattr(fn, "__name__", "handler")
    return handler


def handlers(engine: Engine) -> list[Handler]:
    """The engine's advancement handlers, bound to ``engine``."""
    return [
        define_handler(engine_job_type(name), bind(engine, fn))
        for name, fn in {
            "delay_wake": delay_wake,
            "task_timeout": task_timeout,
            "subprocess_spawn": subprocess_spawn,
            "subprocess_join": subprocess_join,
            "schedule_launch": schedule_launch,
        }.items()
    ]
