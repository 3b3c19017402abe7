"""The worker registry (SPEC L-21, ``system_scheduler_nodes``) and the leader
lease that makes a system task run once per cluster. One row per process
start; the node id contains the host name and the pid."""

from __future__ import annotations

import os
import socket
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import or_, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db.schema import system_leader_leases as leases
from flowledger.db.schema import system_scheduler_nodes as nodes


@dataclass(frozen=True)
class NodeInfo:
    id: str
    hostname: str
    pid: int
    roles: list[str]
    pools: dict[str, int]  # pool name → slot capacity


def new_node(roles: list[str], pools: dict[str, int]) -> NodeInfo:
    host = socket.gethostname()
    pid = os.getpid()
    return NodeInfo(f"{host}:{pid}:{uuid.uuid4().hex[:8]}", host, pid, roles, pools)


async def node_register(conn: AsyncConnection, node: NodeInfo, *, now: datetime) -> None:
    await conn.execute(
        nodes.insert().values(
            id=node.id,
            hostname=node.hostname,
            pid=node.pid,
            roles=node.roles,
            pools=node.pools,
            slots_capacity=sum(node.pools.values()),
            slots_in_use=0,
            status="active",
            started_at=now,
            heartbeat_at=now,
        )
    )


async def node_heartbeat(
    conn: AsyncConnection, node_id: str, *, slots_in_use: int, now: datetime
) -> None:
    await conn.execute(
        update(nodes)
        .where(nodes.c.id == node_id)
        .values(heartbeat_at=now, slots_in_use=slots_in_use, status="active")
    )


async def node_stop(conn: AsyncConnection, node_id: str, *, now: datetime) -> None:
    await conn.execute(
        update(nodes)
        .where(nodes.c.id == node_id)
        .values(heartbeat_at=now, slots_in_use=0, status="stopped")
    )


async def leader_acquire(
    conn: AsyncConnection, name: str, holder: str, *, now: datetime, ttl: timedelta
) -> bool:
    """Take or extend the lease row ``name``; True when ``holder`` now leads."""
    insert = postgresql.insert if conn.dialect.name == "postgresql" else sqlite.insert
    stmt = (
        insert(leases)
        .values(name=name, holder=holder, lease_until=now + ttl)
        .on_conflict_do_update(
            index_elements=[leases.c.name],
            set_={"holder": holder, "lease_until": now + ttl},
            where=or_(leases.c.lease_until < now, leases.c.holder == holder),
        )
        .returning(leases.c.holder)
    )
    leader = (await conn.execute(stmt)).scalar_one_or_none()
    return bool(leader == holder)


async def leader_release(conn: AsyncConnection, name: str, holder: str) -> None:
    await conn.execute(leases.delete().where(leases.c.name == name, leases.c.holder == holder))
