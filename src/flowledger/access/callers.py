"""Callers (DESIGN "Auth"): the authenticated user behind a request or a CLI
command — its permissions and the tenants it sees (``"*"``: every tenant)."""

from __future__ import annotations

from dataclasses import dataclass

ALL_TENANTS = "*"
DEFAULT_TENANT = "default"


@dataclass(frozen=True)
class Caller:
    """The authenticated user behind a request."""

    user_id: str
    display_name: str
    roles: tuple[str, ...]
    permissions: frozenset[str]
    tenants: tuple[str, ...]

    @property
    def all_tenants(self) -> bool:
        return ALL_TENANTS in self.tenants

    def sees(self, tenant: str) -> bool:
        return self.all_tenants or tenant in self.tenants

    @property
    def tenant_scope(self) -> list[str] | None:
        """The tenants a query is limited to (None: every tenant)."""
        return None if self.all_tenants else list(self.tenants)

    @property
    def default_tenant(self) -> str:
        """Where a create lands when the request names no tenant: the caller's
        first tenant, or ``default`` for a caller who sees every tenant."""
        for tenant in self.tenants:
            if tenant != ALL_TENANTS:
                return tenant
        return DEFAULT_TENANT

    def has(self, permission: str) -> bool:
        return permission in self.permissions
