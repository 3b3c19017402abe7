"""One execution pool of a worker process (SPEC L-6, L-7): a number of slots;
it claims only when a slot is free, as many jobs as there are free slots,
refills as soon as a slot frees, and otherwise sleeps until a wake hint, the
earliest pending job's due time, or the poll interval (2 s), whichever is
first. It holds back only while a whole settlement batch of finished jobs
already waits to be written (the database settles slower than handlers
finish); a smaller backlog is the next batch forming while the settler
writes the last one (issue 15: holding back at four times the slots made
each pool wait for the settler's commit and cost a quarter of the drain).
Every fourth claim orders by earliest due. Where the claim's own statement
reports the pool's next due time (the fast paths), the pool sleeps
on that instead of asking in another round trip (issue 15 item 2)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import datetime

import structlog

from flowledger.clock import Clock
from flowledger.db.database import Database
from flowledger.ledger.claim import claim_order
from flowledger.ledger.driver import ledger_driver
from flowledger.ledger.driver.protocol import LedgerDriver
from flowledger.ledger.models import ClaimBatch, ClaimedJob, Outcome, OutcomeKind
from flowledger.telemetry import attempt_span
from flowledger.worker.context import AbortReason, JobContext
from flowledger.worker.executor import execute
from flowledger.worker.registry import HandlerRegistry
from flowledger.worker.settler import MAX_BATCH, Settler

log = structlog.get_logger("flowledger.worker")

MIN_WAIT_S = 0.01  # never spin faster than this on a due-but-locked job

_FAILED = frozenset({OutcomeKind.RETRY, OutcomeKind.DEAD, OutcomeKind.UNCONFIRMED})


def _failed(outcome: Outcome | None) -> bool:
    """Whether a settled attempt failed (None: settled in its own step, as succeeded or skipped)."""
    return outcome is not None and outcome.kind in _FAILED


@dataclass(frozen=True)
class PoolConfig:
    name: str
    slots: int = 4
    poll_interval_s: float = 2.0
    lease_ms: int = 60_000
    abort_grace_s: float = 5.0


class PoolRunner:
    def __init__(
        self,
        db: Database,
        clock: Clock,
        settler: Settler,
        node_id: str,
        config: PoolConfig,
        handlers: HandlerRegistry,
        *,
        ledger: LedgerDriver | None = None,
    ) -> None:
        self.db, self.clock, self.settler, self.node_id = db, clock, settler, node_id
        self.handlers = handlers
        self.config = config
        self.poke = db.hub.subscribe(config.name)
        self.busy = 0
        self.claims = 0
        self._tasks: set[asyncio.Task[None]] = set()
        self.contexts: dict[int, JobContext] = {}
        self.ledger = ledger_driver(db, fast=True)  # the pool's own fast path where offered
        # the driver of its jobs' steps (transactions on the pooled connections)
        self.steps_ledger = ledger or ledger_driver(db)

    async def run(self, stop_claiming: asyncio.Event) -> None:
        try:
            while not stop_claiming.is_set():
                self.poke.clear()
                free = self.config.slots - self.busy
                wait_s = self.config.poll_interval_s
                if free > 0 and self.settler.backlog < MAX_BATCH:
                    batch = await self._claim(free)
                    for job in batch.jobs:
                        self._spawn(job)
                    if batch.jobs and len(batch.jobs) == free:
                        continue  # saturated: take the next batch as soon as slots free
                    wait_s = await self._until_next_due(wait_s, batch)
                try:
                    async with asyncio.timeout(wait_s):
                        await self.poke.wait()
                except TimeoutError:
                    pass
        finally:
            self.db.hub.unsubscribe(self.config.name, self.poke)
            await self.ledger.close()

    async def _until_next_due(self, cap_s: float, batch: ClaimBatch) -> float:
        """Seconds until the pool's earliest pending job falls due (at most
        ``cap_s``): a delay or a staggered replay starts on time, not at the
        next poll. The claim's answer when it carried the time, else asked."""
        due = batch.next_due
        if not batch.next_due_known:
            try:
                due = await self.ledger.jobs_next_due(self.db, pool=self.config.name)
            except Exception as exc:
                log.warning("next_due_failed", pool=self.config.name, error=str(exc))
                return cap_s
        if due is None:
            return cap_s
        return min(cap_s, max(MIN_WAIT_S, (due - self.clock.now()).total_seconds()))

    def wake(self) -> None:
        self.poke.set()

    async def _claim(self, free: int) -> ClaimBatch:
        order = claim_order(self.claims + 1)
        try:
            batch = await self.ledger.jobs_claim_batch(
                self.db,
                pool=self.config.name,
                limit=free,
                node_id=self.node_id,
                now=self.clock.now(),
                order=order,
                lease_ms=self.config.lease_ms,
            )
        except Exception as exc:
            log.warning("claim_failed", pool=self.config.name, error=str(exc))
            await asyncio.sleep(min(self.config.poll_interval_s, 1.0))
            return ClaimBatch([])
        self.claims += 1
        return batch

    def _spawn(self, job: ClaimedJob) -> None:
        self.busy += 1
        ctx = JobContext(job, self.db, self.clock, ledger=self.steps_ledger)
        self.contexts[job.id] = ctx
        task = asyncio.ensure_future(self._run_job(ctx))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _run_job(self, ctx: JobContext) -> None:
        loop = asyncio.get_running_loop()
        timer = loop.call_later(
            _seconds_until(ctx.job.execution_deadline, self.clock.now()),
            ctx.fire_abort,
            AbortReason.DEADLINE,
        )
        try:
            with attempt_span(ctx.job, self.node_id) as attempt:  # no-op untraced
                outcome = await execute(
                    ctx, self.handlers.get(ctx.job.type), abort_grace_s=self.config.abort_grace_s
                )
                attempt.ended(outcome)
        except Exception as exc:  # a bug in the executor itself must not kill the pool
            log.error("executor_failed", job_id=ctx.job.id, error=str(exc))
            outcome = None
        finally:
            timer.cancel()
            self.busy -= 1
            self.poke.set()
        written = False
        try:
            if outcome is not None:
                written = await self.settler.settle(ctx.job, outcome)
        except Exception as exc:
            log.error("settle_lost", job_id=ctx.job.id, error=str(exc))
        finally:
            self.contexts.pop(ctx.job.id, None)
        if written or ctx.settled:  # by the settler or in its own step: the live console
            self.db.changes.job_settled(ctx.job.tenant_id, ctx.job.instance_id, _failed(outcome))

    def abort_all(self, reason: str) -> None:
        for ctx in list(self.contexts.values()):
            ctx.fire_abort(reason)

    async def wait_idle(self, within_s: float | None) -> bool:
        """Wait for running jobs to finish and settle; True when none is left."""
        if not self._tasks:
            return True
        _, pending = await asyncio.wait(set(self._tasks), timeout=within_s)
        return not pending


def _seconds_until(when: datetime, now: datetime) -> float:
    return max(0.0, (when - now).total_seconds())
