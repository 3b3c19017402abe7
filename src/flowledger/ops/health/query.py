"""The parts every health-check builder is made of (SPEC O-16, O-12): the
parameters (:class:`RuleParams`: tenants, threshold, one instance or
definition, ``now``, bound or literal), the status groups the rules name,
the instance / task / job scopes, the running-instance check, and the
``instance_id, task_id, node_key, job_id, since, detail`` row every builder
returns. The rules themselves are :mod:`flowledger.ops.health.rules` (the
registry) and :mod:`flowledger.ops.health.rule_queries` (their builders); the
O-12 checks of one instance that O-16 does not name are
:mod:`flowledger.ops.diagnostics.consistency_checks`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import Select, String, and_, bindparam, cast, exists, func, select
from sqlalchemy.sql.elements import ColumnElement

from flowledger.db.engine_schema import workflow_instances as instances
from flowledger.db.engine_schema import workflow_tasks as tasks
from flowledger.db.engine_schema import workflow_tokens as tokens
from flowledger.db.health_sql import materialized_cte
from flowledger.db.schema import workflow_jobs as jobs
from flowledger.db.types import UTCDateTime
from flowledger.states import InstanceStatus, JobStatus, TaskStatus, TokenState

#: A due job claimed within this long of its run_at is normal work, not an
#: overdue one (delay_overdue, task_timeout_overdue).
DUE_GRACE = timedelta(minutes=1)

HUMAN_KINDS = ("approval", "handle", "catch", "resubmit")
OPEN_TASK = (TaskStatus.PENDING.value, TaskStatus.WAITING.value)
LIVE_JOB = (JobStatus.PENDING.value, JobStatus.RUNNING.value, JobStatus.PAUSED.value)
BROKEN_JOB = (JobStatus.FAILED.value, JobStatus.DEAD.value)
DUE_JOB = (JobStatus.PENDING.value, JobStatus.RUNNING.value, *BROKEN_JOB)


@dataclass(frozen=True)
class RuleParams:
    """What every builder is parametrised by."""

    now: datetime
    threshold: timedelta = timedelta(minutes=30)
    tenants: Sequence[str] | None = None
    instance_id: int | None = None
    definition_key: str | None = None
    #: the caller only counts the rows (:mod:`flowledger.ops.health.counts`):
    #: the running-instance check is a join the planner may run as one
    #: merge or hash join over every candidate, instead of one probe each
    counting: bool = False
    #: the builders write bind parameters (``cutoff``, ``due_before``,
    #: ``tenants``, ``instance_id``, ``definition_key``) instead of these
    #: values, so that one built statement serves every ``now`` and scope of
    #: its shape; :meth:`bind_values` gives the values to execute it with
    bound: bool = False

    @property
    def cutoff(self) -> Any:
        """Conditions that began at or before this are past the threshold."""
        if self.bound:
            return bindparam("cutoff", type_=UTCDateTime())
        return self.now - self.threshold

    @property
    def due_before(self) -> Any:
        """A due job whose run_at is at or before this is overdue (:data:`DUE_GRACE`)."""
        if self.bound:
            return bindparam("due_before", type_=UTCDateTime())
        return self.now - DUE_GRACE

    def tenant_values(self) -> Any:
        """The caller's tenants for an ``IN`` (only when ``tenants`` is not None)."""
        if self.bound:
            return bindparam("tenants", expanding=True)
        return list(self.tenants or ())

    def instance_value(self) -> Any:
        return bindparam("instance_id") if self.bound else self.instance_id

    def definition_value(self) -> Any:
        return bindparam("definition_key") if self.bound else self.definition_key

    def bind_values(self) -> dict[str, Any]:
        """The values of the bind parameters a ``bound`` build uses."""
        values: dict[str, Any] = {"cutoff": self.now - self.threshold}
        values["due_before"] = self.now - DUE_GRACE
        if self.tenants is not None:
            values["tenants"] = list(self.tenants)
        if self.instance_id is not None:
            values["instance_id"] = self.instance_id
        if self.definition_key is not None:
            values["definition_key"] = self.definition_key
        return values

    def shape(self) -> RuleParams:
        """The ``bound`` params of this one's shape: which filters it has, not
        their values (the key of a built statement)."""
        return RuleParams(
            now=_EPOCH,
            threshold=timedelta(0),
            tenants=None if self.tenants is None else (),
            instance_id=None if self.instance_id is None else 0,
            definition_key=None if self.definition_key is None else "",
            counting=self.counting,
            bound=True,
        )


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def scope(p: RuleParams, *, running: bool = True) -> list[ColumnElement[bool]]:
    """The instance filters: running, the caller's tenants, one instance, one
    definition key."""
    where: list[ColumnElement[bool]] = []
    if running:
        where.append(instances.c.status == InstanceStatus.RUNNING.value)
    if p.tenants is not None:
        where.append(instances.c.tenant_id.in_(p.tenant_values()))
    if p.instance_id is not None:
        where.append(instances.c.id == p.instance_value())
    if p.definition_key is not None:
        where.append(instances.c.definition_key == p.definition_value())
    return where


def row_scope(p: RuleParams, table: Any) -> list[ColumnElement[bool]]:
    """The filters a row of ``table`` carries itself: its ``tenant_id`` and
    ``instance_id`` (tasks, jobs, outbox rows)."""
    where: list[ColumnElement[bool]] = []
    if p.tenants is not None:
        where.append(table.c.tenant_id.in_(p.tenant_values()))
    if p.instance_id is not None:
        where.append(table.c.instance_id == p.instance_value())
    return where


def task_scope(p: RuleParams) -> list[ColumnElement[bool]]:
    """The filters a task row carries itself (tenant, instance)."""
    return row_scope(p, tasks)


def job_scope(p: RuleParams) -> list[ColumnElement[bool]]:
    """The filters a job row carries itself (tenant, instance)."""
    return row_scope(p, jobs)


def running(p: RuleParams, candidates: Select[Any]) -> Select[Any]:
    """The candidate rows whose instance is running and in scope. The
    candidates are found first (a materialized CTE on PostgreSQL) and each is
    then checked by one probe of ``ix_workflow_instances_running`` — a scalar
    subquery, which PostgreSQL never turns into a hash join over every
    running instance, whatever it estimates the candidates to be. When
    ``p.counting``, the same condition is a plain join instead: a count
    visits every candidate anyway (tens of thousands at 100,000 instances),
    and one merge join over ``ix_workflow_instances_running`` beats as many
    probes."""
    if p.counting:
        within = candidates.subquery("candidates")
        return (
            select(*(within.c[name] for name in COLUMNS))
            .select_from(within.join(instances, instances.c.id == within.c.instance_id))
            .where(*scope(p))
        )
    found = materialized_cte(candidates, "candidates")
    probe = (
        select(instances.c.id)
        .where(instances.c.id == found.c.instance_id, *scope(p))
        .scalar_subquery()
    )
    return select(*(found.c[name] for name in COLUMNS)).where(probe.isnot(None))


def task_jobs(job_type: str, *where: ColumnElement[bool]) -> Any:
    """Jobs of ``job_type`` attached to the outer task (ix_workflow_jobs_task)."""
    return and_(
        jobs.c.instance_id == tasks.c.instance_id,
        jobs.c.task_id == tasks.c.id,
        jobs.c.type == job_type,
        *where,
    )


def latest_job(job_type: str) -> Any:
    return select(func.max(jobs.c.id)).where(task_jobs(job_type)).scalar_subquery()


def open_tasks(p: RuleParams, *where: ColumnElement[bool]) -> Select[Any]:
    """Open tasks in the caller's scope (their instance is checked by
    :func:`running`)."""
    return select().select_from(tasks).where(tasks.c.status.in_(OPEN_TASK), *where, *task_scope(p))


def columns(
    instance_id: Any, task_id: Any, node_key: Any, job_id: Any, since: Any, detail: Any
) -> list[Any]:
    return [
        instance_id.label("instance_id"),
        task_id.label("task_id"),
        node_key.label("node_key"),
        job_id.label("job_id"),
        since.label("since"),
        cast(detail, String).label("detail"),
    ]


COLUMNS = ("instance_id", "task_id", "node_key", "job_id", "since", "detail")


def task_row(p: RuleParams, job_id: Any, since: Any, detail: Any) -> list[Any]:
    return columns(tasks.c.instance_id, tasks.c.id, tasks.c.node_key, job_id, since, detail)


def holds(holder: Any) -> ColumnElement[bool]:
    """``holder`` (``tokens`` or an alias) is the outer task's token, active
    at the task's node."""
    return and_(
        holder.c.id == tasks.c.token_id,
        holder.c.state == TokenState.ACTIVE.value,
        holder.c.node_key == tasks.c.node_key,
    )


def no_holder_probe() -> ColumnElement[bool]:
    """No token holds the outer task: one primary-key probe (a scalar subquery)."""
    return select(tokens.c.id).where(holds(tokens)).scalar_subquery().is_(None)


def no_open_task() -> Any:
    return ~exists().where(tasks.c.instance_id == instances.c.id, tasks.c.status.in_(OPEN_TASK))


def no_live_job() -> Any:
    return ~exists().where(jobs.c.instance_id == instances.c.id, jobs.c.status.in_(LIVE_JOB))
