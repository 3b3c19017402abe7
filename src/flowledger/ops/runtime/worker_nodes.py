"""The live worker nodes behind the runtime panel's ``liveWorkers`` figure
(SPEC L-23): each node's id, host, status, slots in use and capacity and the
age of its heartbeat — the console's hover card. Read-only.

"Live" is exactly :mod:`flowledger.ops.runtime.status`'s definition (the
``worker`` role, a ledger pool, a heartbeat within 10 min), so the list and
the figure always agree. One range scan of ``ix_system_scheduler_nodes_heartbeat``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import select

from flowledger.db.database import Database
from flowledger.db.schema import system_scheduler_nodes as nodes
from flowledger.ops.runtime.status import ACTIVE_WINDOW, LIVE_WINDOW, _is_ledger_worker


async def live_worker_nodes(db: Database, *, now: datetime | None = None) -> dict[str, Any]:
    """``{"now", "items": [...]}``, nodes by id; ``active`` as in the panel."""
    moment = now or await db.now()
    async with db.read() as conn:
        rows = await conn.execute(
            select(nodes).where(nodes.c.heartbeat_at >= moment - LIVE_WINDOW).order_by(nodes.c.id)
        )
        items = [
            {
                "id": r.id,
                "hostname": r.hostname,
                "pid": r.pid,
                "status": r.status,
                "active": r.status == "active" and r.heartbeat_at >= moment - ACTIVE_WINDOW,
                "pools": dict(r.pools) if isinstance(r.pools, dict) else {},
                "slotsInUse": r.slots_in_use,
                "slotsCapacity": r.slots_capacity,
                "startedAt": r.started_at,
                "heartbeatAt": r.heartbeat_at,
                "heartbeatAgeSeconds": round((moment - r.heartbeat_at).total_seconds(), 3),
            }
            for r in rows
            if _is_ledger_worker(r.roles, r.pools)
        ]
    return {"now": moment, "items": items}
