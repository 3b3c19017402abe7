"""The migration plan and the per-instance result document (issue 30).

A plan names one definition key, its source versions, the instances (explicit
ids or an instance-list filter), the target version, node mapping overrides
(``old → new``; the rest is drafted) and values (constants or
``{"template": …}``) for form fields the target requires that an instance
lacks. The dry run and the run give the
same :class:`InstanceResult` per instance: the verdict (``ok``, ``changed``
or ``blocked``), the reasons for a block, what changes, and the predicted
tokens, open tasks, parked joins, pending jobs and subprocess links."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from flowledger.errors import FlowledgerError, NotFoundError
from flowledger.ops.monitor.filters import InstanceFilter

OK = "ok"
CHANGED = "changed"
BLOCKED = "blocked"
VERDICTS = (OK, CHANGED, BLOCKED)

# why an instance is blocked
NODE_NOT_MAPPED = "node_not_mapped"
JOIN_BRANCH_MISSING = "join_branch_missing"
NODE_TYPE_CHANGED = "node_type_changed"
REQUIRED_FIELD_MISSING = "required_field_missing"
INSTANCE_SUSPENDED = "instance_suspended"
SUBPROCESS_NOT_MIGRATABLE = "subprocess_not_migratable"
NOT_RUNNING = "not_running"
NO_ASSIGNEE = "no_assignee"
ALREADY_ON_TARGET = "already_on_target"
CONSISTENCY = "consistency_check_failed"
BLOCK_CODES = (
    NODE_NOT_MAPPED,
    JOIN_BRANCH_MISSING,
    NODE_TYPE_CHANGED,
    REQUIRED_FIELD_MISSING,
    INSTANCE_SUSPENDED,
    SUBPROCESS_NOT_MIGRATABLE,
    NOT_RUNNING,
    NO_ASSIGNEE,
    ALREADY_ON_TARGET,
    CONSISTENCY,
)

# what changes on an instance that is not blocked
NODE_RENAMED = "node_renamed"
ASSIGNEE = "assignee"
FORM_FIELDS_ADDED = "form_fields_added"
TIMEOUT = "timeout"  # task_timeout jobs added or canceled on a node

MAX_IDS = 10_000


class MigrationInvalid(FlowledgerError):
    """A plan that cannot be applied to any instance (422, the field named)."""

    code = "migration_invalid"


class MigrationNotFound(NotFoundError):
    """No saved migration with that id in the caller's tenants (404)."""

    code = "migration_not_found"


@dataclass(frozen=True)
class MigrationPlan:
    definition_key: str
    from_versions: tuple[int, ...]
    to_version: int
    reason: str
    instance_ids: tuple[int, ...] | None = None
    filter: InstanceFilter | None = None
    mapping: dict[str, str] = field(default_factory=dict)
    field_values: dict[str, Any] = field(default_factory=dict)
    name: str | None = None
    tenant: str = "default"
    tenants: tuple[str, ...] | None = None  # the caller's scope (None: all)


@dataclass
class InstanceResult:
    """One instance's migration, predicted (dry run) or done (run)."""

    instance_id: int
    from_version: int
    to_version: int
    verdict: str = OK
    reasons: list[dict[str, Any]] = field(default_factory=list)
    changes: list[dict[str, Any]] = field(default_factory=list)
    tokens: list[dict[str, Any]] = field(default_factory=list)
    tasks: list[dict[str, Any]] = field(default_factory=list)
    joins: list[dict[str, Any]] = field(default_factory=list)
    jobs: list[dict[str, Any]] = field(default_factory=list)
    subprocesses: list[dict[str, Any]] = field(default_factory=list)
    form_added: dict[str, Any] = field(default_factory=dict)

    def block(self, code: str, message: str, **where: Any) -> None:
        self.reasons.append({"code": code, "message": message, **where})

    def to_public(self) -> dict[str, Any]:
        return {
            "instanceId": self.instance_id,
            "fromVersion": self.from_version,
            "toVersion": self.to_version,
            "verdict": self.verdict,
            "reasons": self.reasons,
            "changes": self.changes,
            "tokens": self.tokens,
            "tasks": self.tasks,
            "joins": self.joins,
            "jobs": self.jobs,
            "subprocesses": self.subprocesses,
            "formAdded": self.form_added,
        }
