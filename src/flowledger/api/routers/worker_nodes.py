"""``GET /api/workflows/engine/workers``: the live worker nodes behind the
runtime panel's ``liveWorkers`` (SPEC L-23) — each node's slots in use and
heartbeat age, for the console's hover card. Needs
``workflow:instance:monitor``; global like the panel (nodes have no tenant)."""

from __future__ import annotations

from datetime import datetime

from fastapi import APIRouter

from flowledger.api.auth import CurrentCaller
from flowledger.api.deps import Ctx
from flowledger.api.permissions import INSTANCE_MONITOR
from flowledger.api.route_access import GuardedRoute, allow
from flowledger.api.schemas import ApiModel
from flowledger.ops.runtime.worker_nodes import live_worker_nodes

router = APIRouter(
    prefix="/engine/workers",
    tags=["workers"],
    route_class=GuardedRoute,
    dependencies=[allow(INSTANCE_MONITOR)],
)


class WorkerNodePublic(ApiModel):
    id: str
    hostname: str
    pid: int
    status: str
    active: bool
    pools: dict[str, int]
    slots_in_use: int
    slots_capacity: int
    started_at: datetime
    heartbeat_at: datetime
    heartbeat_age_seconds: float


class WorkerNodeList(ApiModel):
    now: datetime
    items: list[WorkerNodePublic]


@router.get("", response_model=WorkerNodeList, response_model_by_alias=True)
async def list_worker_nodes(ctx: Ctx, caller: CurrentCaller) -> WorkerNodeList:
    """Live worker nodes by id (the same definition of live as the panel)."""
    return WorkerNodeList.model_validate(await live_worker_nodes(ctx.db))
