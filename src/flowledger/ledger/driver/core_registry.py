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
fewer per step); :meth:`RegistryCore.job_lock_fenced_receipt_first` runs
the caller's own row lock before it (the PostgreSQL driver makes the two
one statement). The fence's conditions and the receipt's join are shared
with that driver (:data:`FENCE_HOLDS`, :data:`JOB_WITH_RECEIPT`).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Select, Update, and_, bindparam, delete, func, or_, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db.dialects import upsert
from flowledger.db.schema import system_leader_leases as leases
from flowledger.db.schema import system_scheduler_nodes as nodes
from flowledger.db.schema import workflow_job_effects as effects
from flowledger.db.schema import workflow_jobs as jobs
from flowledger.errors import LeaseLostError
from flowledger.ledger.driver.protocol import FIRST_LOCK, FIRST_WRITE
from flowledger.ledger.models import Fence, NodeInfo
from flowledger.states import JobStatus

# The fence of job_lock_fenced (FENCE_HOLDS: same generation and lease
# token, running, deadline not reached) with the step's receipt LEFT JOINed
# (JOB_WITH_RECEIPT): built once, the values bound per call. Only the job
# row is locked (FOR UPDATE OF; on SQLite FOR UPDATE compiles to nothing:
# BEGIN IMMEDIATE already excludes writers).
# ``effects.id`` tells a missing receipt from one whose result is JSON null.
JOB_WITH_RECEIPT = jobs.outerjoin(
    effects,
    and_(
        effects.c.operation_key == bindparam("operation_key"),
        effects.c.step_key == bindparam("step_key"),
    ),
)
FENCE_HOLDS = (
    jobs.c.id == bindparam("job_id"),
    jobs.c.generation == bindparam("generation"),
    jobs.c.lease_token == bindparam("lease_token"),
    jobs.c.status == JobStatus.RUNNING.value,
    jobs.c.execution_deadline > bindparam("now"),
)
_LOCK_FENCED_RECEIPT = (
    select(jobs.c.id, effects.c.id.label("receipt_id"), effects.c.result)
    .select_from(JOB_WITH_RECEIPT)
    .where(*FENCE_HOLDS)
    .with_for_update(of=jobs)
)


FENCE_NAMES = ("operation_key", "step_key", "job_id", "generation", "lease_token", "now")


def fence_params(fence: Fence, operation_key: str, step_key: str, now: datetime) -> dict[str, Any]:
    """The bound values of :data:`FENCE_HOLDS` and :data:`JOB_WITH_RECEIPT`."""
    return {
        "operation_key": operation_key,
        "step_key": step_key,
        "job_id": fence.job_id,
        "generation": fence.generation,
        "lease_token": fence.lease_token,
        "now": now,
    }


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
        if row.receipt_id is None:
            return (False, None)
        return (True, row.result)

    async def job_lock_fenced_receipt_first(
        self,
        conn: AsyncConnection,
        first: Select[Any],
        first_params: Mapping[str, Any],
        fence: Fence,
        operation_key: str,
        step_key: str,
        *,
        now: datetime,
        then: Update | None = None,
        then_params: Mapping[str, Any] | None = None,
    ) -> tuple[dict[str, Any] | None, bool, Any]:
        """``first``'s row lock, then :meth:`job_lock_fenced_receipt`: two
        statements, in that order (L-13); then, when the row was found and
        the step has no receipt, ``then`` with ``first`` as its
        :data:`FIRST_LOCK` CTE (a third)."""
        row = (await conn.execute(first, dict(first_params))).mappings().first()
        found, result = await self.job_lock_fenced_receipt(
            conn, fence, operation_key, step_key, now=now
        )
        locked = dict(row) if row is not None else None
        if then is not None and locked is not None:
            written = None
            if not found:
                statement = then.add_cte(first.cte(FIRST_LOCK))
                params = {**first_params, **(then_params or {})}
                hit = (await conn.execute(statement, params)).mappings().first()
                written = dict(hit) if hit is not None else None
            locked[FIRST_WRITE] = written
        return (locked, found, result)

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
