"""The query parameters of the instance list, its counts and its export
(SPEC O-1, O-2), parsed once into an
:class:`~flowledger.ops.monitor.filters.InstanceFilter` within the caller's
tenants (A-3). ``status`` is repeatable and also takes a comma-separated
list (``status=running,suspended``); an unknown status is 422 on
``query.status``. ``startedFrom`` / ``startedTo`` are synonyms of
``createdFrom`` / ``createdTo`` (an instance starts when it is created)."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import Query

from flowledger.api.auth import Caller
from flowledger.api.schemas import MAX_ID, UtcTime
from flowledger.errors import FlowledgerError
from flowledger.ops.monitor.filters import InstanceFilter
from flowledger.states import InstanceStatus

STATUS_VALUES = ", ".join(s.value for s in InstanceStatus)
MAX_STUCK_MINUTES = 60 * 24 * 365


class QueryInvalid(FlowledgerError):
    """A query parameter FastAPI cannot check itself (422, ``field`` names it)."""

    code = "validation_error"


def parse_statuses(values: list[str] | None) -> tuple[str, ...] | None:
    if not values:
        return None
    out: list[str] = []
    for value in values:
        for part in value.split(","):
            name = part.strip()
            if name not in InstanceStatus.__members__.values():
                raise QueryInvalid(
                    f"query.status: {name!r} is not one of {STATUS_VALUES}", field="query.status"
                )
            if name not in out:
                out.append(name)
    return tuple(out)


Time = Annotated[UtcTime | None, Query()]
SortParam = Literal["created", "updated", "finished"]


def instance_filter_params(
    status: Annotated[
        list[str] | None,
        Query(
            max_length=200,
            description=f"Statuses (repeatable or comma-separated): {STATUS_VALUES}.",
        ),
    ] = None,
    definition_key: Annotated[str | None, Query(alias="definitionKey", max_length=64)] = None,
    definition_version: Annotated[
        int | None, Query(alias="definitionVersion", ge=1, le=2**31 - 1)
    ] = None,
    initiator: Annotated[str | None, Query(max_length=128)] = None,
    created_from: Annotated[UtcTime | None, Query(alias="createdFrom")] = None,
    created_to: Annotated[UtcTime | None, Query(alias="createdTo")] = None,
    started_from: Annotated[UtcTime | None, Query(alias="startedFrom")] = None,
    started_to: Annotated[UtcTime | None, Query(alias="startedTo")] = None,
    finished_from: Annotated[UtcTime | None, Query(alias="finishedFrom")] = None,
    finished_to: Annotated[UtcTime | None, Query(alias="finishedTo")] = None,
    current_node: Annotated[
        str | None, Query(alias="currentNode", min_length=1, max_length=128)
    ] = None,
    current_assignee: Annotated[
        str | None, Query(alias="currentAssignee", min_length=1, max_length=128)
    ] = None,
    has_error: Annotated[bool | None, Query(alias="hasError")] = None,
    stuck_minutes: Annotated[
        int | None,
        Query(
            alias="stuckMinutes",
            ge=1,
            le=MAX_STUCK_MINUTES,
            description="Running with no engine progress for at least this many minutes.",
        ),
    ] = None,
    parent_instance_id: Annotated[
        int | None, Query(alias="parentInstanceId", ge=1, le=MAX_ID)
    ] = None,
    keyword: Annotated[
        str | None,
        Query(
            min_length=1,
            max_length=200,
            description="Instance id, trace id, or text in the form data (case-insensitive).",
        ),
    ] = None,
    deadline: Annotated[
        Literal["due_soon", "overdue", "escalated"] | None,
        Query(
            description="A pending task of the instance is due soon, overdue or escalated "
            "(a node's deadline, issue 31 item 4)."
        ),
    ] = None,
) -> InstanceFilter:
    """The filters, without the tenant scope (see :func:`scoped`)."""
    if keyword is not None and "\x00" in keyword:
        raise QueryInvalid("query.keyword: must not contain NUL", field="query.keyword")
    for name, value in (
        ("initiator", initiator),
        ("definitionKey", definition_key),
        ("currentNode", current_node),
        ("currentAssignee", current_assignee),
    ):
        if value is not None and "\x00" in value:
            raise QueryInvalid(f"query.{name}: must not contain NUL", field=f"query.{name}")
    for name, start, end in (
        ("createdFrom", created_from or started_from, created_to or started_to),
        ("finishedFrom", finished_from, finished_to),
    ):  # a reversed range is a mistake, not an empty answer (as health-history has it)
        if start is not None and end is not None and start > end:
            raise QueryInvalid(f"query.{name}: must not be after its 'to'", field=f"query.{name}")
    return InstanceFilter(
        definition_key=definition_key,
        definition_version=definition_version,
        statuses=parse_statuses(status),
        initiator=initiator,
        created_from=created_from or started_from,
        created_to=created_to or started_to,
        finished_from=finished_from,
        finished_to=finished_to,
        current_node=current_node,
        current_assignee=current_assignee,
        has_error=has_error,
        stuck_minutes=stuck_minutes,
        parent_instance_id=parent_instance_id,
        keyword=keyword.strip() or None if keyword is not None else None,
        deadline=deadline,
    )


def scoped(flt: InstanceFilter, caller: Caller, *, initiator: str | None = None) -> InstanceFilter:
    """``flt`` within the caller's tenants (and, if given, one initiator)."""
    scope = caller.tenant_scope
    values = dict(flt.__dict__)
    values["tenants"] = None if scope is None else tuple(scope)
    if initiator is not None:
        values["initiator"] = initiator
    return InstanceFilter(**values)
