"""The filter model of each saved-view scope (SPEC O-1): a saved view's
``filters`` must be a valid filter set of its scope — every key known, every
value of the right type and range — so that opening a view never fails
later. An unknown key or a bad value is 422 ``filters_invalid`` naming the
key as ``filters.<key>``.

Keys are the query parameters of the list each scope stands for:
``instances`` → ``GET /instances``, ``jobs`` → ``GET /engine/jobs``,
``tasks`` → ``GET /tasks``, ``health`` → the health (stuck instance) rules.
Stored filters are the validated values in JSON form, with only the keys
the caller gave."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
)
from pydantic.alias_generators import to_camel

from flowledger.api.job_schemas import (
    BatchIdText,
    FingerprintText,
    JobTypeName,
    KeywordText,
    TraceIdText,
)
from flowledger.api.schemas import MAX_ID, DefinitionKey, UserId, UtcTime
from flowledger.errors import FlowledgerError
from flowledger.ops.health.rules import RULE_CODES
from flowledger.states import InstanceStatus, JobStatus, TaskStatus

HEALTH_RULES = (
    "token_task_mismatch",
    "external_dispatch_failed",
    "external_dispatch_pending",
    "trigger_execution_failed",
    "trigger_waiting_no_execution",
    "subprocess_waiting",
    "delay_missing_wake_job",
    "delay_overdue",
    "task_timeout_overdue",
    "waiting_task_stuck",
    "workflow_event_outbox_failed",
    "workflow_event_outbox_pending",
    "instance_stalled",
    "webhook_delivery_failed",
)
assert set(HEALTH_RULES) == set(RULE_CODES), "the API's rule codes are the inspection's"


def _listed(value: Any) -> Any:
    """A list filter also takes one value or a comma-separated text, like
    the list's query parameter (``"running,suspended"``)."""
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    return value


Listed = BeforeValidator(_listed)


class _Filters(BaseModel):
    model_config = ConfigDict(extra="forbid", alias_generator=to_camel)


class InstanceViewFilters(_Filters):
    definition_key: DefinitionKey | None = None
    definition_version: int | None = Field(default=None, ge=1, le=2**31 - 1)
    status: Annotated[list[InstanceStatus], Listed] | None = Field(default=None, max_length=10)
    initiator: UserId | None = None
    created_from: UtcTime | None = None
    created_to: UtcTime | None = None
    started_from: UtcTime | None = None
    started_to: UtcTime | None = None
    finished_from: UtcTime | None = None
    finished_to: UtcTime | None = None
    current_node: str | None = Field(default=None, min_length=1, max_length=128)
    current_assignee: UserId | None = None
    has_error: bool | None = None
    stuck_minutes: int | None = Field(default=None, ge=1, le=60 * 24 * 365)
    parent_instance_id: int | None = Field(default=None, ge=1, le=MAX_ID)
    keyword: str | None = Field(default=None, min_length=1, max_length=200)
    deadline: Literal["due_soon", "overdue", "escalated"] | None = None
    sort: Literal["created", "updated", "finished"] | None = None


class JobViewFilters(_Filters):
    type: Annotated[list[JobTypeName], Listed] | None = Field(default=None, max_length=50)
    status: Annotated[list[JobStatus], Listed] | None = Field(default=None, max_length=10)
    instance_id: int | None = Field(default=None, ge=1, le=MAX_ID)
    trace_id: TraceIdText | None = None
    keyword: KeywordText | None = None
    fingerprint: FingerprintText | None = None
    replay_batch_id: BatchIdText | None = None
    enqueued_before: UtcTime | None = None
    enqueued_after: UtcTime | None = None


class TaskViewFilters(_Filters):
    assignee: str | None = Field(default=None, min_length=1, max_length=128)
    status: TaskStatus | None = None
    instance_id: int | None = Field(default=None, ge=1, le=MAX_ID)


class HealthViewFilters(_Filters):
    threshold_minutes: int | None = Field(default=None, ge=10, le=1440)
    rule: Literal[HEALTH_RULES] | None = None  # type: ignore[valid-type]
    level: Literal["critical", "warning"] | None = None
    definition_key: DefinitionKey | None = None


FILTER_MODELS: dict[str, type[_Filters]] = {
    "instances": InstanceViewFilters,
    "jobs": JobViewFilters,
    "tasks": TaskViewFilters,
    "health": HealthViewFilters,
}


class FiltersInvalid(FlowledgerError):
    code = "filters_invalid"


def validate_filters(scope: str, filters: dict[str, Any]) -> dict[str, Any]:
    """``filters`` checked against ``scope``'s model, as stored (JSON values)."""
    model = FILTER_MODELS[scope]
    try:
        parsed = model.model_validate(filters)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = first.get("loc") or ()
        key = str(loc[0]) if loc else ""
        what = "unknown filter" if first.get("type") == "extra_forbidden" else first.get("msg")
        raise FiltersInvalid(
            f"filters.{key}: {what} (scope {scope})",
            field=f"filters.{key}",
            scope=scope,
        ) from None
    return parsed.model_dump(mode="json", exclude_unset=True, by_alias=True)
