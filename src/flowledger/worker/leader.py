"""The leader elector (SPEC L-20): one per process, shared by every
leader-gated maintenance service. Each service leads under its own lease row
of ``system_leader_leases`` (the drain, the schedule planner, the health
snapshot, retention, alert evaluation) with this process's holder id, so one
node may lead some tasks and another node others. On shutdown the elector
**resigns**: it deletes every lease it still holds, so another node takes
over at its next tick instead of waiting for the lease to lapse."""

from __future__ import annotations

import os
import socket
import uuid
from datetime import datetime, timedelta

import structlog
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db.database import Database
from flowledger.ledger.driver import ledger_driver
from flowledger.ledger.driver.protocol import LedgerDriver

log = structlog.get_logger("flowledger.worker")


def new_holder() -> str:
    """A holder id unique to this process (host, pid and a random suffix)."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


class LeaderElector:
    """Takes and extends leases for ``holder``; remembers which it won."""

    def __init__(
        self, db: Database, holder: str | None = None, *, ledger: LedgerDriver | None = None
    ) -> None:
        self.db = db
        self.ledger = ledger or ledger_driver(db)  # chosen once
        self.holder = holder or new_holder()
        self.held: set[str] = set()

    async def lead(
        self, conn: AsyncConnection, name: str, *, now: datetime, ttl: timedelta
    ) -> bool:
        """Take or extend lease ``name`` in ``conn``'s transaction; True when
        this holder leads it now."""
        leads = await self.ledger.leader_acquire(conn, name, self.holder, now=now, ttl=ttl)
        if leads:
            self.held.add(name)
        else:
            self.held.discard(name)
        return leads

    async def resign(self) -> list[str]:
        """Release every lease this holder still holds (a lease another node
        took meanwhile is left alone); the names released."""
        names = sorted(self.held)
        if not names:
            return []
        async with self.db.begin() as conn:
            for name in names:
                await self.ledger.leader_release(conn, name, self.holder)
        self.held.clear()
        log.info("leader_resigned", holder=self.holder, leases=names)
        return names
