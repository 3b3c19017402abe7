"""Request and response models of the REST API (STYLE: ``XxxCreate`` bodies,
``XxxPublic`` objects, ``XxxPage`` lists). JSON is camelCase; Python
attributes are snake_case. Request bodies refuse unknown fields (a typo is a
422 naming it, never silently ignored) and bound every string by the column
it lands in, so a too-long value is a 422 here rather than a database error.

Response models are built from the query rows of
:mod:`flowledger.engine.queries` by their ``from_row`` constructors; that is
the only place where column names meet API names.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any, Literal, Self

from pydantic import AfterValidator, AwareDatetime, BaseModel, ConfigDict, Field, model_validator
from pydantic.alias_generators import to_camel

from flowledger.engine.deadlines import task_flags
from flowledger.states import InstanceStatus, TaskStatus, TokenState

MAX_ID = 2**63 - 1


def no_nul(value: str) -> str:
    """Refuse U+0000: no database stores it in text (a 422 on the field instead)."""
    if "\x00" in value:
        raise ValueError("must not contain NUL characters")
    return value


def no_nul_inside(value: dict[str, Any]) -> dict[str, Any]:
    """PostgreSQL's jsonb cannot store U+0000; refuse it anywhere in a JSON
    object (keys included) instead of failing in the database."""
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            no_nul(item)
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return value


def not_null(value: Any) -> Any:
    """For an optional PATCH field: null is refused, leaving the field out
    keeps it (``field_validator(...)(not_null)`` on the fields concerned)."""
    if value is None:
        raise ValueError("cannot be null (leave the field out to keep it)")
    return value


NO_NUL = AfterValidator(no_nul)
JsonObject = Annotated[dict[str, Any], AfterValidator(no_nul_inside)]

UserId = Annotated[str, Field(min_length=1, max_length=128), NO_NUL]
DefinitionKey = Annotated[str, Field(min_length=1, max_length=64), NO_NUL]
TenantId = Annotated[str, Field(pattern=r"^[A-Za-z0-9_.-]{1,64}$")]
Reason = Annotated[str, Field(max_length=2000), NO_NUL]
RequiredReason = Annotated[str, Field(min_length=1, max_length=2000), NO_NUL]
Body = Annotated[str, Field(min_length=1, max_length=10_000), NO_NUL]
Source = Annotated[str, Field(min_length=1, max_length=1_000_000), NO_NUL]
Cron = Annotated[str, Field(min_length=1, max_length=128), NO_NUL]
Name = Annotated[str, Field(min_length=1, max_length=255), NO_NUL]
TimeZone = Annotated[str, Field(min_length=1, max_length=64), NO_NUL]


def _utc(value: datetime) -> datetime:
    """An aware time that exists in UTC (``0001-01-01T00:00+01:00`` does not)."""
    try:
        return value.astimezone(UTC)
    except OverflowError:
        raise ValueError("time is out of range") from None


#: An input time: with an offset, and one that exists in UTC — out of range
#: is a 422 on the field, never a 500 when the database binds it (SPEC A-4).
UtcTime = Annotated[AwareDatetime, AfterValidator(_utc)]


class ApiModel(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)


class RequestModel(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, extra="forbid")


class ErrorPublic(BaseModel):
    """Every error: a stable code, a message, the field it is about, and the
    error's own details (``problems``, ``permission``, ``errors`` …)."""

    model_config = ConfigDict(extra="allow")
    code: str
    message: str
    field: str | None = None


# ---------------------------------------------------------------- definitions


class DefinitionCreate(RequestModel):
    """Exactly one of ``source`` (YAML or JSON text) or ``definition`` (the
    parsed document)."""

    source: Source | None = None
    definition: JsonObject | None = None
    tenant: TenantId | None = None

    @model_validator(mode="after")
    def _one_source(self) -> Self:
        if (self.source is None) == (self.definition is None):
            raise ValueError("give exactly one of source or definition")
        return self


class DefinitionPublic(ApiModel):
    id: int
    tenant: str
    key: str
    version: int
    name: str
    deployed_by: str
    deployed_at: datetime

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Self:
        return cls(
            id=row["id"],
            tenant=row["tenant_id"],
            key=row["key"],
            version=row["version"],
            name=row["name"],
            deployed_by=row["deployed_by"],
            deployed_at=row["deployed_at"],
        )


class DefinitionVersionPublic(DefinitionPublic):
    source: dict[str, Any]

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Self:
        base = DefinitionPublic.from_row(row).model_dump()
        return cls(**base, source=row["source"])


class DefinitionPage(ApiModel):
    items: list[DefinitionPublic]
    next: str | None = None


# ------------------------------------------------------------------ instances


class InstanceCreate(RequestModel):
    definition_key: DefinitionKey
    version: int | None = Field(default=None, ge=1, le=2**31 - 1)
    form: JsonObject = Field(default_factory=dict)
    initiator: UserId | None = None
    tenant: TenantId | None = None


class ReasonBody(RequestModel):
    reason: Reason | None = None


class CommentCreate(RequestModel):
    body: Body


class InstancePublic(ApiModel):
    id: int
    tenant: str
    definition_key: str
    definition_version: int
    status: InstanceStatus
    form: dict[str, Any]
    initiator: str
    parent_instance_id: int | None = None
    parent_task_id: int | None = None
    trace_id: str
    error: str | None = None
    created_at: datetime
    updated_at: datetime
    finished_at: datetime | None = None
    deadline: list[Literal["overdue", "due_soon", "escalated"]] = Field(
        default_factory=list,
        description="The deadline states of its pending tasks (listing only; issue 31 item 4).",
    )

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Self:
        return cls(
            deadline=row.get("deadline", []),
            id=row["id"],
            tenant=row["tenant_id"],
            definition_key=row["definition_key"],
            definition_version=row["definition_version"],
            status=row["status"],
            form=row["form_data"],
            initiator=row["initiator"],
            parent_instance_id=row["parent_instance_id"],
            parent_task_id=row["parent_task_id"],
            trace_id=row["trace_id"],
            error=row["error"],
            created_at=row["created_at"],
            updated_at=row["updated_at"],
            finished_at=row["finished_at"],
        )


class InstancePage(ApiModel):
    items: list[InstancePublic]
    next: str | None = None


class TokenPublic(ApiModel):
    id: int
    node_key: str
    state: TokenState
    fork_stack: list[int]
    created_at: datetime
    consumed_at: datetime | None = None

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Self:
        return cls(
            id=row["id"],
            node_key=row["node_key"],
            state=row["state"],
            fork_stack=row["fork_stack"] or [],
            created_at=row["created_at"],
            consumed_at=row["consumed_at"],
        )


class CommentPublic(ApiModel):
    id: int
    instance_id: int
    task_id: int | None = None
    author: str
    body: str
    created_at: datetime

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Self:
        return cls(
            id=row["id"],
            instance_id=row["instance_id"],
            task_id=row["task_id"],
            author=row["author"],
            body=row["body"],
            created_at=row["created_at"],
        )


class TraceEntryPublic(ApiModel):
    id: int
    trace_id: str
    event: str
    node_key: str | None = None
    token_id: int | None = None
    task_id: int | None = None
    job_id: int | None = None
    detail: dict[str, Any] | None = None
    created_at: datetime

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Self:
        return cls(
            id=row["id"],
            trace_id=row["trace_id"],
            event=row["event"],
            node_key=row["node_key"],
            token_id=row["token_id"],
            task_id=row["task_id"],
            job_id=row["job_id"],
            detail=row["detail"],
            created_at=row["created_at"],
        )


# ---------------------------------------------------------------------- tasks


class TaskDecision(RequestModel):
    """Approve or handle: an optional comment and form fields to write."""

    comment: Reason | None = None
    form: JsonObject | None = None


class TaskRejection(RequestModel):
    comment: Reason | None = None


class TaskTransfer(RequestModel):
    to: UserId
    comment: Reason | None = None


class TaskReassign(RequestModel):
    """SPEC O-5: an operator moves a pending task to another user; the reason
    is required and goes to the audit."""

    to: UserId
    reason: RequiredReason


class TaskPublic(ApiModel):
    id: int
    instance_id: int
    tenant: str
    node_key: str
    kind: str
    status: TaskStatus
    assignee: str
    action: str | None = None
    comment: str | None = None
    token_id: int | None = None
    due_at: datetime | None = None
    created_at: datetime
    finished_at: datetime | None = None
    finished_by: str | None = None
    definition_key: str | None = None
    initiator: str | None = None
    instance_status: InstanceStatus | None = None
    due_soon: bool = Field(
        default=False, description="Pending and due within the due-soon window (4 h)."
    )
    overdue: bool = Field(default=False, description="Pending and past its due time.")
    escalated_at: datetime | None = Field(
        default=None,
        description="When its deadline's escalation first transferred or told an administrator.",
    )
    escalation_step: int | None = Field(
        default=None, description="The last step of its deadline's chain done (0: due time passed)."
    )

    @classmethod
    def from_row(cls, row: dict[str, Any], *, now: datetime | None = None) -> Self:
        due_soon, overdue = (
            (False, False) if now is None else task_flags(row["status"], row["due_at"], now)
        )
        return cls(
            id=row["id"],
            instance_id=row["instance_id"],
            tenant=row["tenant_id"],
            node_key=row["node_key"],
            kind=row["kind"],
            status=row["status"],
            assignee=row["assignee"],
            action=row["action"],
            comment=row["comment"],
            token_id=row["token_id"],
            due_at=row["due_at"],
            created_at=row["created_at"],
            finished_at=row["finished_at"],
            finished_by=row["finished_by"],
            definition_key=row.get("definition_key"),
            initiator=row.get("initiator"),
            instance_status=row.get("instance_status"),
            due_soon=due_soon,
            overdue=overdue,
            escalated_at=row.get("escalated_at"),
            escalation_step=row.get("escalation_step"),
        )


class TaskPage(ApiModel):
    items: list[TaskPublic]
    next: str | None = None


class InstanceDetail(InstancePublic):
    """SPEC O-3: the instance with its tasks, tokens, comments and trace."""

    tasks: list[TaskPublic]
    tokens: list[TokenPublic]
    comments: list[CommentPublic]
    trace: list[TraceEntryPublic]

    @classmethod
    def from_row(cls, row: dict[str, Any], *, now: datetime | None = None) -> Self:
        base = InstancePublic.from_row(row)
        tasks = [TaskPublic.from_row(t, now=now) for t in row["tasks"]]
        states = {
            "overdue": any(t.overdue for t in tasks),
            "due_soon": any(t.due_soon for t in tasks),
            "escalated": any(t.escalated_at and t.status == "pending" for t in tasks),
        }
        return cls(
            **{**dict(base), "deadline": [name for name, on in states.items() if on]},
            tasks=tasks,
            tokens=[TokenPublic.from_row(t) for t in row["tokens"]],
            comments=[CommentPublic.from_row(c) for c in row["comments"]],
            trace=[TraceEntryPublic.from_row(t) for t in row["trace"]],
        )


# ------------------------------------------------------------------ schedules


class ScheduleCreate(RequestModel):
    definition_key: DefinitionKey
    cron: Cron
    form: JsonObject = Field(default_factory=dict)
    name: Name | None = None
    timezone: TimeZone = "UTC"
    initiator: UserId | None = None
    tenant: TenantId | None = None


class ScheduleUpdate(RequestModel):
    """Turn a schedule off (no more launches by its rule) or back on."""

    enabled: bool


class SchedulePublic(ApiModel):
    id: int
    tenant: str
    name: str
    definition_key: str
    cron: str
    timezone: str
    form: dict[str, Any]
    initiator: str
    enabled: bool
    next_run_at: datetime | None = None
    last_run_at: datetime | None = None
    created_at: datetime

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Self:
        return cls(
            id=row["id"],
            tenant=row["tenant_id"],
            name=row["name"],
            definition_key=row["definition_key"],
            cron=row["cron"],
            timezone=row["timezone"],
            form=row["form"],
            initiator=row["initiator"],
            enabled=row["enabled"],
            next_run_at=row["next_run_at"],
            last_run_at=row["last_run_at"],
            created_at=row["created_at"],
        )


class SchedulePage(ApiModel):
    items: list[SchedulePublic]
    next: str | None = None


class ScheduleLaunchPublic(ApiModel):
    """A manual launch (SPEC E-9): the ``schedule_launch`` job that will start
    the instance; ``id`` is that job's id."""

    id: int
    job_id: int
    schedule_id: int


# ------------------------------------------------------------------------- me


class MePublic(ApiModel):
    id: str
    display_name: str
    roles: list[str]
    permissions: list[str]
    tenants: list[str]
