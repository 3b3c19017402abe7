"""The data-retention policies (SPEC O-20): their names, defaults and the
operator overrides stored in ``workflow_retention_policies``. Reading and
changing the settings only; what each policy removes is
:mod:`flowledger.ops.retention.purge`.

======================================  ====  ===============================
policy                                  days  removes
======================================  ====  ===============================
``workflow_tokens``                       90  tokens of terminal instances
                                              (approved / rejected /
                                              withdrawn / canceled) finished
                                              more than N days ago
``system_scheduler_nodes``                 7  worker-registry rows whose last
                                              heartbeat is N days old
``workflow_jobs``                         30  succeeded and canceled jobs
                                              settled N days ago, with their
                                              attempts and receipts
``workflow_trace``                       180  engine trace of terminal
                                              instances finished N days ago
``workflow_event_outbox``                 30  dispatched outbox rows and
                                              delivered webhook records
                                              (subscription hits)
``workflow_health_snapshots``             90  health snapshots (``taken_at``)
======================================  ====  ===============================

Nothing of a running or suspended instance, of an instance with a pending
compensation ticket, and no dead or failed job is ever removed.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db.dialects import upsert
from flowledger.db.retention_schema import workflow_retention_policies as overrides
from flowledger.errors import FlowledgerError

MAX_KEEP_DAYS = 3650


class UnknownPolicy(FlowledgerError):
    code = "unknown_policy"


@dataclass(frozen=True)
class PolicyDefault:
    name: str
    keep_days: int
    description: str
    enabled: bool = True


DEFAULTS: tuple[PolicyDefault, ...] = (
    PolicyDefault("workflow_tokens", 90, "Tokens of terminal instances, after the finish"),
    PolicyDefault("system_scheduler_nodes", 7, "Worker registry rows, after the last heartbeat"),
    PolicyDefault(
        "workflow_jobs", 30, "Succeeded and canceled jobs with their attempts and receipts"
    ),
    PolicyDefault("workflow_trace", 180, "Engine trace of terminal instances, after the finish"),
    PolicyDefault(
        "workflow_event_outbox", 30, "Dispatched outbox rows and delivered webhook records"
    ),
    PolicyDefault("workflow_health_snapshots", 90, "Engine health snapshots"),
)
BY_NAME = {p.name: p for p in DEFAULTS}


@dataclass(frozen=True)
class Policy:
    name: str
    description: str
    enabled: bool
    keep_days: int
    default_enabled: bool
    default_keep_days: int
    updated_by: str | None
    updated_at: datetime | None

    def public(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "enabled": self.enabled,
            "keepDays": self.keep_days,
            "defaultEnabled": self.default_enabled,
            "defaultKeepDays": self.default_keep_days,
            "updatedBy": self.updated_by,
            "updatedAt": self.updated_at,
        }


def check_name(name: str, *, field: str = "name") -> PolicyDefault:
    try:
        return BY_NAME[name]
    except KeyError:
        raise UnknownPolicy(
            f"unknown retention policy {name!r}", field=field, known=sorted(BY_NAME)
        ) from None


async def load_policies(conn: AsyncConnection) -> list[Policy]:
    """Every policy with its effective settings, in the documented order."""
    stored = {r.name: r for r in await conn.execute(select(overrides))}
    result = []
    for default in DEFAULTS:
        row = stored.get(default.name)
        result.append(
            Policy(
                name=default.name,
                description=default.description,
                enabled=default.enabled if row is None else bool(row.enabled),
                keep_days=default.keep_days if row is None else int(row.keep_days),
                default_enabled=default.enabled,
                default_keep_days=default.keep_days,
                updated_by=None if row is None else row.updated_by,
                updated_at=None if row is None else row.updated_at,
            )
        )
    return result


@dataclass(frozen=True)
class PolicyChange:
    name: str
    enabled: bool | None = None
    keep_days: int | None = None


async def update_policies(
    conn: AsyncConnection, changes: list[PolicyChange], *, actor: str, now: datetime
) -> None:
    """Apply ``changes`` (names already checked) as upserts of the override
    rows, in the caller's transaction (all or nothing)."""
    current = {p.name: p for p in await load_policies(conn)}
    for change in changes:
        policy = current[change.name]
        values = {
            "name": change.name,
            "enabled": policy.enabled if change.enabled is None else change.enabled,
            "keep_days": policy.keep_days if change.keep_days is None else change.keep_days,
            "updated_by": actor,
            "updated_at": now,
        }
        stmt = upsert(conn, overrides).values(**values)
        stmt = stmt.on_conflict_do_update(
            index_elements=[overrides.c.name],
            set_={k: v for k, v in values.items() if k != "name"},
        )
        await conn.execute(stmt)
