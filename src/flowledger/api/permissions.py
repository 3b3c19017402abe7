"""The API's permission checks: :mod:`flowledger.access.permissions`
(re-exported for the routers; the rules live below the API)."""

from flowledger.access.permissions import (
    ALL_PERMISSIONS,
    DEFINITION_MANAGE,
    ENGINE_OPERATE,
    INSTANCE_MONITOR,
    INSTANCE_START,
    TASK_ACT,
    require,
    require_any,
    require_own,
    require_tenant,
)

__all__ = [
    "ALL_PERMISSIONS",
    "DEFINITION_MANAGE",
    "ENGINE_OPERATE",
    "INSTANCE_MONITOR",
    "INSTANCE_START",
    "TASK_ACT",
    "require",
    "require_any",
    "require_own",
    "require_tenant",
]
