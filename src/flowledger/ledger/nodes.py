"""The worker registry (SPEC L-21, ``system_scheduler_nodes``) and the leader
lease that makes a system task run once per cluster, in the caller's
transaction — delegated to the ledger driver."""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.ledger.driver import ledger_for
from flowledger.ledger.models import NodeInfo, new_node

__all__ = [
    "NodeInfo",
    "leader_acquire",
    "leader_release",
    "new_node",
    "node_heartbeat",
    "node_register",
    "node_stop",
]


async def node_register(conn: AsyncConnection, node: NodeInfo, *, now: datetime) -> None:
    await ledger_for(conn).node_register(conn, node, now=now)


async def node_heartbeat(
    conn: AsyncConnection, node_id: str, *, slots_in_use: int, now: datetime
) -> None:
    await ledger_for(conn).node_heartbeat(conn, node_id, slots_in_use=slots_in_use, now=now)


async def node_stop(conn: AsyncConnection, node_id: str, *, now: datetime) -> None:
    await ledger_for(conn).node_stop(conn, node_id, now=now)


async def leader_acquire(
    conn: AsyncConnection, name: str, holder: str, *, now: datetime, ttl: timedelta
) -> bool:
    """Take or extend the lease row ``name``; True when ``holder`` now leads."""
    return await ledger_for(conn).leader_acquire(conn, name, holder, now=now, ttl=ttl)


async def leader_release(conn: AsyncConnection, name: str, holder: str) -> None:
    await ledger_for(conn).leader_release(conn, name, holder)
