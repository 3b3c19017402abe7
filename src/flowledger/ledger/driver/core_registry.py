"""The shared Core implementation of the ledger's small registries: step
receipts (SPEC L-14, ``workflow_job_effects``), the worker registry (L-21,
``system_scheduler_nodes``) and the leader lease that makes a system task run
once per cluster (``system_leader_leases``).

A receipt is unique per operationKey + stepKey and commits with the step's
business write in one fenced transaction. Written after an unsafe external
write was marked (L-17), ``confirm_side_effect`` clears the job's
side-effect marker in that transaction, so a crash before settlement retries
the job (which then reuses the receipt) instead of dead-lettering it.
:meth:`RegistryCore.job_lock_fenced_receipt` takes a step's fenced job lock
and reads its receipt in one statement (issue 15 item 2: one round trip
fewer per step); the fence's conditions and the receipt's join are
:mod:`~flowledger.ledger.driver.fence`'s.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import bindparam, delete, func, or_, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db.dialects import upsert
from flowledger.db.schema import system_leader_leases as leases
from flowledger.db.schema import system_scheduler_nodes as nodes
from flowledger.db.schema import workflow_job_effects as effects
from flowledger.db.schema import workflow_jobs as jobs
from flowledger.errors import LeaseLostError
from flowledger.ledger.driver.fence import (
    RECEIPT_ID,
    RECEIPT_RESULT,
    fence_params,
    lock_fenced_after,
)
from flowledger.ledger.models import Fence, NodeInfo

_LOCK_FENCED_RECEIPT = lock_fenced_after([], [])


# receipt_put's statements, built once (building ``insert().values(…)`` per
# call cost ~0.1 ms of Python, twice per engine step through a delay)
_PUT_RECEIPT = effects.insert()
_CONFIRM_SIDE_EFFECT = (
    update(jobs).where(jobs.c.id == bindparam("b_job_id")).values(side_effect_at=None)
)


class RegistryCore:
    """Receipts, nodes and leader leases in portable Core."""

    async def receipt_get(
        self, conn: AsyncConnection, operation_key: str, step_key: str
    ) -> tuple[bool, Any]:
        row = (
            await conn.execute(
                select(effects.c.result).where(
                    effects.c.operation_key == operation_key, effects.c.step_key == step_key
                )
            )
        ).first()
        return (row is not None, row.result if row is not None else None)

    async def job_lock_fenced_receipt(
        self,
        conn: AsyncConnection,
        fence: Fence,
        operation_key: str,
        step_key: str,
        *,
        now: datetime,
    ) -> tuple[bool, Any]:
        """``job_lock_fenced`` then ``receipt_get``, in one statement: lock the
        job row if ``fence`` still owns it (else LeaseLostError), and return
        (found, result) of the step's committed receipt."""
        row = (
            await conn.execute(
                _LOCK_FENCED_RECEIPT, fence_params(fence, operation_key, step_key, now)
            )
        ).first()
        if row is None:
            raise LeaseLostError(f"job {fence.job_id} is no longer owned by this executor")
        values = row._mapping
        if values[RECEIPT_ID] is None:
            return (False, None)
        return (True, values[RECEIPT_RESULT])

    async def receipt_put(
        self,
        conn: AsyncConnection,
        fence: Fence,
        operation_key: str,
        step_key: str,
        result: Any,
        *,
        now: datetime,
        confirm_side_effect: bool = False,
    ) -> None:
        """The caller has locked the job row fenced (``job_lock_fenced``)."""
        await conn.execute(
            _PUT_RECEIPT,
            {
                "operation_key": operation_key,
                "step_key": step_key,
                "job_id": fence.job_id,
                "generation": fence.generation,
                "result": result,
                "created_at": now,
            },
        )
        if confirm_side_effect:
            await conn.execute(_CONFIRM_SIDE_EFFECT, {"b_job_id": fence.job_id})

    async def node_register(self, conn: AsyncConnection, node: NodeInfo, *, now: datetime) -> None:
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
        self, conn: AsyncConnection, node_id: str, *, slots_in_use: int, now: datetime
    ) -> None:
        await conn.execute(
            update(nodes)
            .where(nodes.c.id == node_id)
            .values(heartbeat_at=now, slots_in_use=slots_in_use, status="active")
        )

    async def node_stop(self, conn: AsyncConnection, node_id: str, *, now: datetime) -> None:
        await conn.execute(
            update(nodes)
            .where(nodes.c.id == node_id)
            .values(heartbeat_at=now, slots_in_use=0, status="stopped")
        )

    async def nodes_purge_count(self, conn: AsyncConnection, *, before: datetime) -> int:
        stmt = select(func.count()).select_from(nodes).where(nodes.c.heartbeat_at < before)
        return int((await conn.execute(stmt)).scalar_one())

    async def nodes_purge_batch(
        self, conn: AsyncConnection, *, before: datetime, limit: int = 1000
    ) -> int:
        ids = select(nodes.c.id).where(nodes.c.heartbeat_at < before).limit(limit)
        result = await conn.execute(delete(nodes).where(nodes.c.id.in_(ids.scalar_subquery())))
        return int(result.rowcount)

    async def leader_acquire(
        self, conn: AsyncConnection, name: str, holder: str, *, now: datetime, ttl: timedelta
    ) -> bool:
        stmt = (
            upsert(conn, leases)
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

    async def leader_release(self, conn: AsyncConnection, name: str, holder: str) -> None:
        await conn.execute(leases.delete().where(leases.c.name == name, leases.c.holder == holder))
