"""The one filter over workflow instances shared by the instance list, its
status counts and the export (SPEC O-1, O-2), applied to a SQLAlchemy select
of ``workflow_instances``. Tenant scope (A-3) is part of it: ``tenants=None``
means every tenant.

What each filter means, and the PostgreSQL index serving it (the list in
``docs/monitoring.md``):

- ``definition_key`` / ``definition_version``: ``ix_workflow_instances_definition``
  and ``ix_workflow_instances_definition_version``;
- ``statuses`` (any of): ``ix_workflow_instances_tenant_status``,
  ``ix_workflow_instances_status_updated``;
- ``initiator``: ``ix_workflow_instances_initiator``;
- started (``created_from`` inclusive, ``created_to`` exclusive) and finished
  time ranges: ``ix_workflow_instances_created_id`` / ``…_tenant_created``,
  ``ix_workflow_instances_finished_id``;
- ``current_node``: an active or parked token sits at that node
  (``ix_workflow_tokens_node_state``);
- ``current_assignee``: that user holds a pending task of the instance
  (``ix_workflow_tasks_assignee``);
- ``has_error``: the instance records an error, or one of its jobs is
  ``dead`` or ``failed`` (``ix_workflow_instances_has_error``,
  ``ix_workflow_jobs_instance``); ``False`` is the exact negation;
- ``stuck_minutes``: running, and no engine progress for at least that many
  minutes — neither the instance row (``updated_at``) nor any engine trace
  row (SPEC E-8: every step writes one) is newer than that
  (``ix_workflow_instances_status_updated``; the recently active instances
  come from ``ix_workflow_trace_created`` for a hash anti-join, or per
  instance from ``ix_workflow_trace_instance``). ``updated_at`` alone would
  not do: the engine moves it only when the instance row itself changes,
  not when a token moves;
- ``deadline`` (issue 31 item 4): a pending task of the instance is
  ``overdue`` (its due time has passed), ``due_soon`` (due within
  :data:`~flowledger.engine.deadlines.DUE_SOON`) or ``escalated`` (a
  deadline's transfer or administrator notice happened)
  (``ix_workflow_tasks_instance``);
- ``parent_instance_id``: ``ix_workflow_instances_parent``;
- ``keyword``: the instance id (when the keyword is a number), the trace id
  (exact) or a case-insensitive substring of the form's JSON text — keys and
  values (``pk_workflow_instances``, ``ix_workflow_instances_trace``,
  ``ix_workflow_instances_form_trgm``, a pg_trgm GIN index). ``%`` and ``_``
  in the keyword are literal.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import ColumnElement, and_, exists, false, not_, or_

from flowledger.db.engine_schema import (
    workflow_instances,
    workflow_tasks,
    workflow_tokens,
    workflow_trace,
)
from flowledger.db.portable import json_text_contains
from flowledger.db.schema import workflow_jobs
from flowledger.engine.deadlines import DUE_SOON
from flowledger.engine.interventions import EVENT as INTERVENTION
from flowledger.states import InstanceStatus, JobStatus, TaskStatus, TokenState

i = workflow_instances.c
MAX_ID = 2**63 - 1


@dataclass(frozen=True)
class InstanceFilter:
    definition_key: str | None = None
    definition_version: int | None = None
    statuses: tuple[str, ...] | None = None
    initiator: str | None = None
    created_from: datetime | None = None
    created_to: datetime | None = None
    finished_from: datetime | None = None
    finished_to: datetime | None = None
    current_node: str | None = None
    current_assignee: str | None = None
    has_error: bool | None = None
    stuck_minutes: int | None = None
    parent_instance_id: int | None = None
    keyword: str | None = None
    deadline: str | None = None
    tenants: tuple[str, ...] | None = None

    def without_statuses(self) -> InstanceFilter:
        """The same filter with any status (the counts' base: one badge per status)."""
        return InstanceFilter(**{**self.__dict__, "statuses": None})

    def conditions(self, now: datetime) -> list[ColumnElement[bool]]:
        out: list[ColumnElement[bool]] = []
        if self.tenants is not None:
            out.append(i.tenant_id.in_(self.tenants) if self.tenants else false())
        if self.definition_key is not None:
            out.append(i.definition_key == self.definition_key)
        if self.definition_version is not None:
            out.append(i.definition_version == self.definition_version)
        if self.statuses:
            out.append(i.status.in_(self.statuses))
        if self.initiator is not None:
            out.append(i.initiator == self.initiator)
        if self.created_from is not None:
            out.append(i.created_at >= self.created_from)
        if self.created_to is not None:
            out.append(i.created_at < self.created_to)
        if self.finished_from is not None:
            out.append(i.finished_at >= self.finished_from)
        if self.finished_to is not None:
            out.append(i.finished_at < self.finished_to)
        if self.current_node is not None:
            t = workflow_tokens.c
            out.append(
                exists().where(
                    t.node_key == self.current_node,
                    t.state.in_([TokenState.ACTIVE.value, TokenState.PARKED.value]),
                    t.instance_id == i.id,
                )
            )
        if self.current_assignee is not None:
            k = workflow_tasks.c
            out.append(
                exists().where(
                    k.assignee == self.current_assignee,
                    k.status == TaskStatus.PENDING.value,
                    k.instance_id == i.id,
                )
            )
        if self.has_error is not None:
            out.append(self._has_error() if self.has_error else not_(self._has_error()))
        if self.stuck_minutes is not None:
            cutoff = now - timedelta(minutes=self.stuck_minutes)
            tr = workflow_trace.c
            out.append(i.status == InstanceStatus.RUNNING.value)
            out.append(i.updated_at <= cutoff)
            # an operator's intervention is no progress of the engine (issue 31)
            out.append(
                ~exists().where(
                    tr.instance_id == i.id, tr.created_at > cutoff, tr.event != INTERVENTION
                )
            )
        if self.parent_instance_id is not None:
            out.append(i.parent_instance_id == self.parent_instance_id)
        if self.keyword:
            out.append(self._keyword(self.keyword))
        if self.deadline is not None:
            out.append(deadline_condition(self.deadline, now))
        return out

    @staticmethod
    def _has_error() -> ColumnElement[bool]:
        j = workflow_jobs.c
        failed_job = exists().where(
            j.instance_id == i.id,
            j.status.in_([JobStatus.DEAD.value, JobStatus.FAILED.value]),
        )
        return or_(i.error.is_not(None), failed_job)

    @staticmethod
    def _keyword(keyword: str) -> ColumnElement[bool]:
        matches: list[ColumnElement[bool]] = [
            i.trace_id == keyword,
            json_text_contains(i.form_data, keyword),
        ]
        if keyword.isdigit() and int(keyword) <= MAX_ID:
            matches.append(i.id == int(keyword))
        return or_(*matches)

    def apply(self, query: Any, now: datetime) -> Any:
        conditions = self.conditions(now)
        return query.where(and_(*conditions)) if conditions else query


def deadline_condition(state: str, now: datetime) -> ColumnElement[bool]:
    """A pending task of the instance is in deadline ``state`` (one of
    :data:`~flowledger.engine.deadlines.DEADLINE_STATES`)."""
    k = workflow_tasks.c
    if state == "overdue":
        which = k.due_at <= now
    elif state == "due_soon":
        which = and_(k.due_at > now, k.due_at <= now + DUE_SOON)
    else:
        which = k.escalated_at.is_not(None)
    return exists().where(k.instance_id == i.id, k.status == TaskStatus.PENDING.value, which)
