"""The outbox relay (SPEC E-10, X-5): a periodic service on every worker that
makes sure an ``event_dispatch`` job exists while outbox rows are pending.

Cheap when idle: one read of the oldest pending row on the outbox's status
index (``ix_workflow_event_outbox_status``), in a read transaction that never
blocks SQLite's writer. Only when rows wait and no dispatch job is waiting
or running for them does it open a write transaction and enqueue one; the
idempotency key (see :mod:`flowledger.events.outbox`) makes the relays of
many workers enqueue it once.
"""

from __future__ import annotations

from flowledger.clock import Clock
from flowledger.db.database import Database
from flowledger.events.outbox import dispatch_job_key, ensure_dispatch_job, oldest_pending
from flowledger.ledger.driver import ledger_driver
from flowledger.worker.services import PeriodicService

RELAY_INTERVAL_S = 2.0


class EventRelay(PeriodicService):
    name = "event_relay"

    def __init__(self, db: Database, clock: Clock, *, interval_s: float = RELAY_INTERVAL_S) -> None:
        super().__init__(interval_s)
        self.db, self.clock = db, clock
        self.ledger = ledger_driver(db)  # chosen once

    async def run_once(self) -> None:
        await self.relay_once()

    async def relay_once(self) -> int | None:
        """Enqueue a dispatch job if one is needed; returns its id."""
        async with self.db.read() as conn:
            oldest = await oldest_pending(conn)
            if oldest is None or await dispatch_job_key(conn, oldest) is None:
                return None
        async with self.db.begin() as conn:
            return await ensure_dispatch_job(conn, now=self.clock.now(), ledger=self.ledger)
