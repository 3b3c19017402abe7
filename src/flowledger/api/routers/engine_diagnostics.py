"""``GET /api/workflows/engine/diagnostics`` (SPEC O-18): engine state
introspection and queue distribution — live nodes, leader leases, the last
drain and schedule-planner runs, the outbox backlog, the ledger's settings,
job counts by type x status, the oldest due job per type, per pool. A read:
needs ``workflow:instance:monitor`` and is never audited. Job and outbox
figures count the caller's tenants only. The read model is
:mod:`flowledger.ops.runtime.engine_diagnostics`."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from fastapi import APIRouter

from flowledger.api.auth import CurrentCaller
from flowledger.api.deps import Ctx
from flowledger.api.job_schemas import JobPausePublic
from flowledger.api.permissions import INSTANCE_MONITOR
from flowledger.api.route_access import GuardedRoute, allow
from flowledger.api.schemas import ApiModel
from flowledger.ops.runtime.engine_diagnostics import engine_diagnostics

router = APIRouter(prefix="/engine", tags=["engine"], route_class=GuardedRoute)


class NodePublic(ApiModel):
    id: str
    hostname: str
    pid: int
    roles: list[str]
    pools: dict[str, int]
    slots_capacity: int
    slots_in_use: int
    started_at: datetime
    heartbeat_at: datetime
    heartbeat_age_s: float
    status: str
    active: bool


class LeaderPublic(ApiModel):
    name: str
    holder: str
    lease_until: datetime
    valid: bool


class SystemTaskRunPublic(ApiModel):
    name: str
    node_id: str
    started_at: datetime
    finished_at: datetime
    duration_ms: int
    age_s: float | None
    summary: dict[str, Any]


class OutboxRowPublic(ApiModel):
    id: int
    event_type: str
    created_at: datetime
    age_s: float | None


class OutboxPublic(ApiModel):
    pending: int
    failed: int
    oldest_pending: OutboxRowPublic | None


class JobTypePublic(ApiModel):
    name: str
    pool: str
    max_attempts: int
    execution_timeout_ms: int
    priority: int


class LedgerSettingsPublic(ApiModel):
    ledger_slots: int
    outbound_slots: int
    poll_interval_s: float
    lease_ms: int
    lease_renew_interval_s: float
    heartbeat_interval_s: float
    drain_interval_s: float
    shutdown_grace_s: float
    job_types: list[JobTypePublic]


class TypeStatusCount(ApiModel):
    """Jobs of one type in one status; ``estimated``: the figure is the
    planner's estimate (an exact count would read millions of rows)."""

    type: str
    status: str
    count: int
    estimated: bool = False


class OldestDue(ApiModel):
    type: str
    run_at: datetime
    age_s: float | None
    due: int


class PoolQueue(ApiModel):
    pool: str
    pending: int
    due: int
    running: int
    oldest_due_run_at: datetime | None
    oldest_due_age_s: float | None


class QueuePublic(ApiModel):
    by_type_status: list[TypeStatusCount]
    oldest_due_by_type: list[OldestDue]
    pools: list[PoolQueue]


class EngineDiagnosticsPublic(ApiModel):
    now: datetime
    nodes: list[NodePublic]
    leaders: list[LeaderPublic]
    drain: SystemTaskRunPublic | None
    schedule_planner: SystemTaskRunPublic | None
    outbox: OutboxPublic
    settings: LedgerSettingsPublic
    queue: QueuePublic
    paused_scopes: list[JobPausePublic]


@router.get(
    "/diagnostics", response_model=EngineDiagnosticsPublic, dependencies=[allow(INSTANCE_MONITOR)]
)
async def read_engine_diagnostics(ctx: Ctx, caller: CurrentCaller) -> EngineDiagnosticsPublic:
    """The engine's state now: nodes, leaders, system task runs, outbox,
    settings and the queue distribution (tenant-scoped job figures)."""
    data = await engine_diagnostics(
        ctx.db,
        now=ctx.now(),
        settings=ctx.settings,
        job_types=ctx.job_types.types(),
        tenants=caller.tenant_scope,
    )
    return EngineDiagnosticsPublic.model_validate(data)
