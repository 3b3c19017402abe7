"""Batched settlement: finished attempts queue here and are written in
batches (one statement for all successes on PostgreSQL), group-commit style:
while one batch is being written the next one accumulates, so no artificial
delay is added. A failing database write is retried with backoff; jobs stay
leased (and renewed) until their settlement lands or is fenced out."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field

import structlog

from flowledger.clock import Clock
from flowledger.db.database import Database
from flowledger.ledger.driver import ledger_driver
from flowledger.ledger.models import ClaimedJob, Outcome

log = structlog.get_logger("flowledger.worker")

MAX_BATCH = 256


@dataclass
class _Item:
    job: ClaimedJob
    outcome: Outcome
    done: asyncio.Future[bool] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )


class Settler:
    def __init__(
        self,
        db: Database,
        clock: Clock,
        *,
        retry_for_s: float = 60.0,
        linger_s: float = 0.002,
        linger_batch: int = 16,
    ) -> None:
        self.linger_s, self.linger_batch = linger_s, linger_batch
        self.on_flushed: list[Callable[[], None]] = []
        self.db = db
        self.clock = clock
        self.retry_for_s = retry_for_s
        self._queue: list[_Item] = []
        self._ready = asyncio.Event()
        self.ledger = ledger_driver(db, fast=True)  # the settler's own fast path where offered

    @property
    def backlog(self) -> int:
        return len(self._queue)

    async def settle(self, job: ClaimedJob, outcome: Outcome) -> bool:
        """Queue a settlement and wait until it is written; False if fenced out."""
        item = _Item(job, outcome)
        self._queue.append(item)
        self._ready.set()
        return await item.done

    async def flush_once(self) -> int:
        """Write everything queued now; returns the number of items handled."""
        batch, self._queue = self._queue[:MAX_BATCH], self._queue[MAX_BATCH:]
        if not batch:
            return 0
        delay, waited = 0.05, 0.0
        while True:
            try:
                settled = await self.ledger.jobs_settle(
                    self.db, [(i.job, i.outcome) for i in batch], now=self.clock.now()
                )
                break
            except Exception as exc:  # database unreachable: keep trying a while
                if waited >= self.retry_for_s:
                    log.error("settle_gave_up", error=str(exc), jobs=[i.job.id for i in batch])
                    for item in batch:
                        if not item.done.done():
                            item.done.set_exception(exc)
                    return len(batch)
                log.warning("settle_failed_retrying", error=str(exc))
                await asyncio.sleep(delay)
                waited += delay
                delay = min(delay * 2, 2.0)
        for item in batch:
            if not item.done.done():
                item.done.set_result(item.job.id in settled)
        for callback in self.on_flushed:
            callback()  # pools held back by a full backlog may claim again
        return len(batch)

    async def run(self, stop: asyncio.Event) -> None:
        while not (stop.is_set() and not self._queue):
            if not self._queue:
                self._ready.clear()
                stop_wait = asyncio.ensure_future(stop.wait())
                ready_wait = asyncio.ensure_future(self._ready.wait())
                await asyncio.wait({stop_wait, ready_wait}, return_when=asyncio.FIRST_COMPLETED)
                stop_wait.cancel()
                ready_wait.cancel()
                continue
            if len(self._queue) < self.linger_batch and not stop.is_set():
                await asyncio.sleep(self.linger_s)  # let a bigger batch gather
            await self.flush_once()
        await self.ledger.close()
