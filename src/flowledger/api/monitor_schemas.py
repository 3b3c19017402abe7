"""Request and response models of instance monitoring (SPEC O-1, O-2, O-3,
O-5): status counts, the form correction, saved views and reminders.
Conventions of :mod:`flowledger.api.schemas` (camelCase JSON, unknown
request fields refused, strings bounded)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal, Self

from pydantic import Field, field_validator

from flowledger.api.schemas import (
    ApiModel,
    JsonObject,
    Name,
    Reason,
    RequestModel,
    RequiredReason,
    TenantId,
    not_null,
)

ViewScope = Literal["instances", "jobs", "tasks", "health"]
NonBlankReason = Annotated[RequiredReason, Field(pattern=r"\S")]


class InstanceCounts(ApiModel):
    """Instances matching the filter (status itself aside) in each status,
    every status present; ``total`` is their sum. Where an exact count
    would read millions of rows the figure is the planner's estimate:
    ``estimatedStatuses`` names those statuses and ``estimated`` (then also
    true of ``total``) says whether any figure is one (issue 34 item 3)."""

    counts: dict[str, int]
    total: int
    estimated: bool = False
    estimated_statuses: list[str] = []


class FormCorrection(RequestModel):
    """Fields to correct (merged into the form and validated against its
    schema) and the reason, required and not blank."""

    changes: Annotated[JsonObject, Field(min_length=1, max_length=200)]
    reason: NonBlankReason


class FormCorrectionResult(ApiModel):
    instance_id: int
    write_id: int
    previous: dict[str, Any]
    form: dict[str, Any]


class ViewCreate(RequestModel):
    name: Name
    scope: ViewScope
    filters: JsonObject = Field(default_factory=dict)
    shared: bool = False
    is_default: bool = False
    tenant: TenantId | None = None


class ViewUpdate(RequestModel):
    """Only the fields given change; null is refused on each (it was ignored)."""

    name: Name | None = None
    filters: JsonObject | None = None
    shared: bool | None = None
    is_default: bool | None = None

    _not_null = field_validator("name", "filters", "shared", "is_default")(not_null)


class ViewPublic(ApiModel):
    id: int
    tenant: str
    owner: str
    scope: ViewScope
    name: str
    filters: dict[str, Any]
    shared: bool
    is_default: bool
    created_at: datetime
    updated_at: datetime

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Self:
        return cls(
            id=row["id"],
            tenant=row["tenant_id"],
            owner=row["owner"],
            scope=row["scope"],
            name=row["name"],
            filters=row["filters"],
            shared=row["shared"],
            is_default=row["is_default"],
            created_at=row["created_at"],
            updated_at=row["updated_at"],
        )


class ViewList(ApiModel):
    items: list[ViewPublic]


class RemindBody(RequestModel):
    note: Reason | None = None


class ReminderPublic(ApiModel):
    task_id: int
    assignee: str
    message_id: int
    reminded_at: datetime
    next_allowed_at: datetime
    email: Literal["sent", "not_configured", "no_address", "failed"]
