"""Permissions (SPEC A-2) and tenant scope (A-3): what a caller may do.

===============================  =============================================
``workflow:definition:manage``   deploy definitions; create and launch schedules
``workflow:instance:start``      start instances
``workflow:task:act``            act on tasks assigned to you; withdraw and
                                 comment on instances you started; list and read
                                 your own tasks and instances
``workflow:engine:operate``      act on anyone's tasks; cancel, suspend, resume,
                                 return to initiator; reassign; start for
                                 another initiator
``workflow:instance:monitor``    read every instance and task, list definitions
===============================  =============================================

Refusals: a missing permission is 403 ``forbidden`` naming it; an object in a
tenant the caller cannot see is 404 — the same answer as for an object that
does not exist, so existence never leaks across tenants. The coarse
permission is declared on each API route and checked first, before the body
is read (:mod:`flowledger.api.route_access`: nothing about the object is
revealed); the route then loads the object within the caller's tenants (404),
then applies the per-object rule (your own task or instance, 403). This
module decides; it never reads the database.
"""

from __future__ import annotations

from flowledger.access.callers import Caller
from flowledger.access.errors import Forbidden

DEFINITION_MANAGE = "workflow:definition:manage"
INSTANCE_START = "workflow:instance:start"
TASK_ACT = "workflow:task:act"
ENGINE_OPERATE = "workflow:engine:operate"
INSTANCE_MONITOR = "workflow:instance:monitor"

ALL_PERMISSIONS = (
    DEFINITION_MANAGE,
    INSTANCE_START,
    TASK_ACT,
    ENGINE_OPERATE,
    INSTANCE_MONITOR,
)


def require(caller: Caller, permission: str) -> None:
    """403 unless the caller holds ``permission``."""
    if not caller.has(permission):
        raise Forbidden(f"this needs the permission {permission}", permission=permission)


def require_any(caller: Caller, *permissions: str) -> None:
    """403 unless the caller holds one of ``permissions`` (the first is named)."""
    if not any(caller.has(p) for p in permissions):
        raise Forbidden(
            f"this needs one of the permissions {', '.join(permissions)}",
            permission=permissions[0],
            anyOf=list(permissions),
        )


def require_tenant(caller: Caller, tenant: str) -> None:
    """403 when the caller names a tenant it cannot see for something new."""
    if not caller.sees(tenant):
        raise Forbidden(f"tenant {tenant!r} is not visible to you", field="tenant", tenant=tenant)


def require_own(caller: Caller, owner: str, permission: str = TASK_ACT) -> None:
    """Acting on something of one's own needs ``permission``; on anyone
    else's it needs ``workflow:engine:operate``."""
    if caller.has(ENGINE_OPERATE):
        return
    if owner == caller.user_id:
        require(caller, permission)
        return
    raise Forbidden(
        "this belongs to someone else; acting on it needs " + ENGINE_OPERATE,
        permission=ENGINE_OPERATE,
    )
