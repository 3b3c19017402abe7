"""Helpers for the in-process worker tests (SPEC L-6 … L-21).

A test runs a real :class:`~flowledger.worker.worker.Worker` in a background
task on a :class:`~flowledger.clock.ManualClock`. The periodic services get
hour-long intervals so they run once at start and then only when the test
calls ``run_once()`` after moving the clock; nothing in these tests sleeps to
wait for a delay, every wait is a short poll for a state.

Handlers: one job type, ``wt_scripted``, whose handler looks up the behaviour
named by ``payload["key"]`` in :data:`BEHAVIOURS`; a test registers a
behaviour (often a :class:`Gate`, which blocks until the test releases it or
the job's abort fires) and enqueues a job pointing at it.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, select

from flowledger.clock import ManualClock
from flowledger.db.database import Database
from flowledger.db.schema import system_scheduler_nodes as nodes
from flowledger.db.schema import workflow_job_executions as executions
from flowledger.ledger.models import JobSpec
from flowledger.runtime import Runtime
from flowledger.states import Pool
from flowledger.worker.context import JobContext
from flowledger.worker.worker import Worker, WorkerConfig
from tests.integration.ledger_helpers import attempt_rows, job_row
from tests.ledger_access import ledger_of
from tests.runtime_support import TEST_HANDLERS, runtime_for

LEDGER = Pool.LEDGER.value
OUTBOUND = Pool.OUTBOUND.value

Behaviour = Callable[[JobContext], Awaitable[Any]]
BEHAVIOURS: dict[str, Behaviour] = {}


async def _scripted(ctx: JobContext) -> Any:
    return await BEHAVIOURS[ctx.payload["key"]](ctx)


SCRIPTED = TEST_HANDLERS.register("wt_scripted", _scripted, max_attempts=3).job_type

# Long intervals: the test drives the time-dependent services itself.
QUIET: dict[str, Any] = {
    "poll_interval_s": 0.05,
    "lease_renew_interval_s": 3600,
    "heartbeat_interval_s": 3600,
    "drain_interval_s": 3600,
    "shutdown_grace_s": 1.0,
    "abort_grace_s": 0.2,
    "listen": False,
}


def worker_config(**overrides: Any) -> WorkerConfig:
    return WorkerConfig(**{**QUIET, **overrides})


class Gate:
    """A handler that blocks until the test releases it or (when it honours
    aborts) the job's abort signal fires; it records what it saw."""

    def __init__(self, *, honour_abort: bool = True, result: Any = None) -> None:
        self.honour_abort = honour_abort
        self.result = result
        self.started = asyncio.Event()
        self.release = asyncio.Event()
        self.calls = 0
        self.abort_reason: str | None = None
        self.cancelled = False
        self.ctx: JobContext | None = None

    async def __call__(self, ctx: JobContext) -> Any:
        self.calls += 1
        self.ctx = ctx
        self.started.set()
        waits = [asyncio.ensure_future(self.release.wait())]
        if self.honour_abort:
            waits.append(asyncio.ensure_future(ctx.abort.wait()))
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            self.cancelled = True
            self.abort_reason = ctx.abort_reason
            raise
        finally:
            for waiter in waits:
                waiter.cancel()
        self.abort_reason = ctx.abort_reason
        return self.result


def behave(fn: Behaviour) -> dict[str, Any]:
    """Register ``fn`` under a fresh key; returns the payload naming it."""
    key = uuid.uuid4().hex
    BEHAVIOURS[key] = fn
    return {"key": key}


async def add_scripted(db: Database, clock: ManualClock, fn: Behaviour, **spec: Any) -> int:
    """Enqueue (and commit) one ``wt_scripted`` job running ``fn``."""
    async with db.begin() as conn:
        result = await ledger_of(conn).job_insert(
            conn, JobSpec(type=SCRIPTED, payload=behave(fn), **spec), now=clock.now()
        )
    return result.job_id


async def wait_until(
    predicate: Callable[[], Any], *, within: float = 5.0, what: str = "condition"
) -> Any:
    """Poll ``predicate`` (sync or async) every 10 ms until it is truthy."""
    deadline = asyncio.get_running_loop().time() + within
    while True:
        value = predicate()
        if asyncio.iscoroutine(value):
            value = await value
        if value:
            return value
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out after {within} s waiting for {what}")
        await asyncio.sleep(0.01)


async def wait_job(db: Database, job_id: int, status: str, *, within: float = 5.0) -> Any:
    """Wait until job ``job_id`` has ``status``, has been claimed at least once
    and no attempt of it is still running."""

    async def check() -> Any:
        # the attempts first: an attempt is finished in the transaction that
        # settles its job, so the row read after them is at least that new.
        # (Read the other way round, a still unclaimed ``pending`` row could
        # be answered for a job claimed, failed and settled between the reads.)
        attempts = await attempt_rows(db, job_id)
        if not attempts or any(a.status == "running" for a in attempts):
            return None
        row = await job_row(db, job_id)
        return row if row.status == status else None

    try:
        return await wait_until(check, within=within, what=f"job {job_id} {status}")
    except AssertionError as exc:
        row = await job_row(db, job_id)
        raise AssertionError(f"{exc}; it is {row.status} ({row.last_error_code})") from None


async def wait_started(gate: Gate, *, within: float = 5.0) -> None:
    await wait_until(gate.started.is_set, within=within, what="the handler to start")


def is_idle(worker: Worker) -> bool:
    """No job is executing or waiting for its settlement in ``worker``."""
    return not worker.inflight() and worker.slots_in_use() == 0


def claimers_stopped(worker: Worker) -> bool:
    """Every pool has left its claim loop (it unsubscribes from the wake hub)."""
    waiters = worker.db.hub._waiters
    return all(pool.poke not in waiters.get(pool.config.name, set()) for pool in worker.pools)


async def count_attempts(db: Database) -> int:
    async with db.read() as conn:
        return int((await conn.execute(select(func.count()).select_from(executions))).scalar_one())


async def node_row(db: Database, node_id: str) -> Any:
    async with db.read() as conn:
        return (await conn.execute(select(nodes).where(nodes.c.id == node_id))).one()


@dataclass
class Running:
    worker: Worker
    stop: asyncio.Event
    task: asyncio.Task[None]
    runtime: Runtime | None = None

    async def shutdown(self, *, within: float = 15.0) -> None:
        self.stop.set()
        try:
            async with asyncio.timeout(within):
                await self.task  # re-raises anything the worker died of
        finally:
            if self.runtime is not None:
                await self.runtime.aclose()  # its outbound client


async def start_worker(
    db: Database, clock: ManualClock, config: WorkerConfig | None = None
) -> Running:
    runtime = runtime_for(db, clock)
    worker = runtime.worker(config or worker_config(), maintenance=False)
    stop = asyncio.Event()
    task = asyncio.ensure_future(worker.run(stop))
    # start-up registers the node and opens the pools' connections: 5 s ran out
    # once in a CI run on a loaded machine (two cores, load 6)
    await wait_until(
        lambda: worker.started.is_set() or task.done(), within=20.0, what="the worker to start"
    )
    if task.done():
        task.result()  # raise what it died of
    return Running(worker, stop, task, runtime)


@asynccontextmanager
async def running_worker(
    db: Database, clock: ManualClock, **overrides: Any
) -> AsyncIterator[Running]:
    """A worker running for the duration of the block, then shut down."""
    running = await start_worker(db, clock, worker_config(**overrides))
    try:
        yield running
        assert not running.task.done(), "the worker stopped on its own"
    finally:
        await running.shutdown()
