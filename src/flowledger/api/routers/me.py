"""The caller (DESIGN "Auth"): who the token belongs to, with its effective
permissions and visible tenants. Any valid token may read it."""

from __future__ import annotations

from fastapi import APIRouter

from flowledger.api.auth import CurrentCaller
from flowledger.api.route_access import AUTHENTICATED, GuardedRoute
from flowledger.api.schemas import MePublic

router = APIRouter(
    prefix="/me", tags=["me"], route_class=GuardedRoute, dependencies=[AUTHENTICATED]
)


@router.get("", response_model=MePublic)
async def read_me(caller: CurrentCaller) -> MePublic:
    return MePublic(
        id=caller.user_id,
        display_name=caller.display_name,
        roles=list(caller.roles),
        permissions=sorted(caller.permissions),
        tenants=list(caller.tenants),
    )
