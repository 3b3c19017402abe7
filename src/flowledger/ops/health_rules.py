"""The health checks, each implemented once (SPEC O-16, O-12): one query
builder per rule, parametrised by the caller's tenants, the threshold, an
optional instance id and definition key, and the time ``now`` (the database
time of the caller). Both the engine-wide health inspection
(:mod:`flowledger.ops.health_inspection`) and one instance's consistency
conclusions (:mod:`flowledger.ops.consistency`) run these same builders;
where O-12 names a check that O-16 does not, its builder lives here too.

Every builder returns one set-based ``SELECT`` with the columns
``instance_id, task_id, node_key, job_id, since, detail`` (``detail``: a short
text the message uses — an assignee, a job status or error code, a count).
Nothing here loops over instances. The exact condition of each rule is
written in ``docs/operations.md`` and in :data:`RULES`.

Indexes (PostgreSQL): open tasks by ``ix_workflow_tasks_open_created`` /
``ix_workflow_tasks_open_kind`` (partial, status pending/waiting); a task's
jobs by ``ix_workflow_jobs_task`` (instance, task, type); failed/dead jobs
by type by ``ix_workflow_jobs_status_type``; tokens by
``ix_workflow_tokens_instance_state``; attempts by
``ix_workflow_job_executions_job``; outbox rows by
``ix_workflow_event_outbox_status`` (status, created_at) or
``…_outbox_instance``; running instances by ``ix_workflow_instances_running``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import (
    Integer,
    Select,
    String,
    and_,
    bindparam,
    case,
    cast,
    exists,
    func,
    literal,
    null,
    or_,
    select,
)
from sqlalchemy.sql.elements import ColumnElement

from flowledger.db.engine_schema import workflow_event_outbox as outbox
from flowledger.db.engine_schema import workflow_instances as instances
from flowledger.db.engine_schema import workflow_tasks as tasks
from flowledger.db.engine_schema import workflow_tokens as tokens
from flowledger.db.health_sql import materialized_cte
from flowledger.db.schema import workflow_job_executions as executions
from flowledger.db.schema import workflow_jobs as jobs
from flowledger.db.types import UTCDateTime
from flowledger.states import InstanceStatus, JobStatus, TaskStatus, TokenState

CRITICAL = "critical"
WARNING = "warning"

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
    #: the caller only counts the rows (:mod:`flowledger.ops.health_counts`):
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


Builder = Callable[[RuleParams], Select[Any]]
#: The conditions under which a rule driven by open tasks reports one: on the
#: columns of ``tasks`` (an open task in the caller's scope whose instance is
#: running and in scope) and ``no_holder``, the condition "no active token
#: at the task's node holds it" (written by the caller: a probe or a join).
TaskWhen = Callable[[RuleParams, ColumnElement[bool]], list[ColumnElement[bool]]]


@dataclass(frozen=True)
class Rule:
    code: str
    level: str
    #: lower is more important; a task reports only its lowest-priority rule
    priority: int
    #: "missing token" > "job anomaly" > "stuck" (instance- and outbox-level
    #: rules are "instance")
    group: str
    build: Builder
    #: whether the rule measures its condition against the threshold
    uses_threshold: bool
    #: for a rule that reports open tasks (one row per task): its conditions,
    #: which :func:`open_task_priorities` evaluates for all such rules in one
    #: pass over the open tasks (``build`` applies the same conditions)
    when: TaskWhen | None = None


# ------------------------------------------------------------------ helpers


def _scope(p: RuleParams, *, running: bool = True) -> list[ColumnElement[bool]]:
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


def _task_scope(p: RuleParams) -> list[ColumnElement[bool]]:
    """The filters a task row carries itself (tenant, instance)."""
    where: list[ColumnElement[bool]] = []
    if p.tenants is not None:
        where.append(tasks.c.tenant_id.in_(p.tenant_values()))
    if p.instance_id is not None:
        where.append(tasks.c.instance_id == p.instance_value())
    return where


def _job_scope(p: RuleParams) -> list[ColumnElement[bool]]:
    """The filters a job row carries itself (tenant, instance)."""
    where: list[ColumnElement[bool]] = []
    if p.tenants is not None:
        where.append(jobs.c.tenant_id.in_(p.tenant_values()))
    if p.instance_id is not None:
        where.append(jobs.c.instance_id == p.instance_value())
    return where


def _running(p: RuleParams, candidates: Select[Any]) -> Select[Any]:
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
            .where(*_scope(p))
        )
    found = materialized_cte(candidates, "candidates")
    probe = (
        select(instances.c.id)
        .where(instances.c.id == found.c.instance_id, *_scope(p))
        .scalar_subquery()
    )
    return select(*(found.c[name] for name in COLUMNS)).where(probe.isnot(None))


def _task_jobs(job_type: str, *where: ColumnElement[bool]) -> Any:
    """Jobs of ``job_type`` attached to the outer task (ix_workflow_jobs_task)."""
    return and_(
        jobs.c.instance_id == tasks.c.instance_id,
        jobs.c.task_id == tasks.c.id,
        jobs.c.type == job_type,
        *where,
    )


def _latest_job(job_type: str) -> Any:
    return select(func.max(jobs.c.id)).where(_task_jobs(job_type)).scalar_subquery()


def _open_tasks(p: RuleParams, *where: ColumnElement[bool]) -> Select[Any]:
    """Open tasks in the caller's scope (their instance is checked by
    :func:`_running`)."""
    return select().select_from(tasks).where(tasks.c.status.in_(OPEN_TASK), *where, *_task_scope(p))


def _columns(
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


def _task_row(p: RuleParams, job_id: Any, since: Any, detail: Any) -> list[Any]:
    return _columns(tasks.c.instance_id, tasks.c.id, tasks.c.node_key, job_id, since, detail)


def _holds(holder: Any) -> ColumnElement[bool]:
    """``holder`` (``tokens`` or an alias) is the outer task's token, active
    at the task's node."""
    return and_(
        holder.c.id == tasks.c.token_id,
        holder.c.state == TokenState.ACTIVE.value,
        holder.c.node_key == tasks.c.node_key,
    )


def _no_holder_probe() -> ColumnElement[bool]:
    """No token holds the outer task: one primary-key probe (a scalar subquery)."""
    return select(tokens.c.id).where(_holds(tokens)).scalar_subquery().is_(None)


def _task_rule(p: RuleParams, when: TaskWhen, job_id: Any, since: Any, detail: Any) -> Select[Any]:
    """The open tasks in scope, of a running instance in scope, for which
    ``when`` holds, as rows."""
    query = _open_tasks(p, *when(p, _no_holder_probe())).add_columns(
        *_task_row(p, job_id, since, detail)
    )
    return _running(p, query)


# -------------------------------------------------------------------- rules


def _token_task_mismatch_when(p: RuleParams, no_holder: ColumnElement[bool]) -> list[Any]:
    return [tasks.c.created_at <= p.cutoff, no_holder]


def token_task_mismatch(p: RuleParams) -> Select[Any]:
    """An open task whose token is missing, not active, or at another node,
    created at or before the cutoff. The token is one primary-key probe per
    candidate (a scalar subquery)."""
    return _task_rule(p, _token_task_mismatch_when, null(), tasks.c.created_at, tasks.c.assignee)


def _active_token_at_job_node() -> Any:
    return exists().where(
        tokens.c.instance_id == jobs.c.instance_id,
        tokens.c.state == TokenState.ACTIVE.value,
        tokens.c.node_key == jobs.c.node_key,
    )


def _broken_dispatch(job_type: str, p: RuleParams) -> Select[Any]:
    """A ``job_type`` job failed or dead while the flow still waits at its
    node (an active token there), it is the node's newest job of that type,
    and no person was handed the node's decision instead (no open approval /
    handle task at the node, as ``dispatchFallback: manual`` creates; a
    repair ``catch`` task there does not count: the failure still awaits
    its repair)."""
    newer = jobs.alias("newer")
    other_task = tasks.alias("other_task")
    return (
        select(
            *_columns(
                instances.c.id,
                jobs.c.task_id,
                jobs.c.node_key,
                jobs.c.id,
                jobs.c.updated_at,
                func.coalesce(jobs.c.last_error_code, jobs.c.status),
            )
        )
        .select_from(jobs.join(instances, instances.c.id == jobs.c.instance_id))
        .where(
            jobs.c.type == job_type,
            jobs.c.status.in_(BROKEN_JOB),
            _active_token_at_job_node(),
            ~exists().where(
                newer.c.instance_id == jobs.c.instance_id,
                newer.c.node_key == jobs.c.node_key,
                newer.c.type == job_type,
                newer.c.id > jobs.c.id,
            ),
            ~exists().where(
                other_task.c.instance_id == jobs.c.instance_id,
                other_task.c.node_key == jobs.c.node_key,
                other_task.c.status.in_(OPEN_TASK),
                other_task.c.kind.notin_(["external_approval", "trigger", "catch"]),
            ),
            *_job_scope(p),
            *_scope(p),
        )
    )


def external_dispatch_failed(p: RuleParams) -> Select[Any]:
    return _broken_dispatch("external_dispatch", p)


def trigger_execution_failed(p: RuleParams) -> Select[Any]:
    return _broken_dispatch("trigger_dispatch", p)


def _external_dispatch_pending_when(p: RuleParams, no_holder: ColumnElement[bool]) -> list[Any]:
    return [
        tasks.c.kind == "external_approval",
        tasks.c.status == TaskStatus.PENDING.value,
        tasks.c.created_at <= p.cutoff,
        ~exists().where(
            _task_jobs(
                "external_dispatch",
                jobs.c.status.in_([JobStatus.SUCCEEDED.value, *BROKEN_JOB]),
            )
        ),
    ]


def external_dispatch_pending(p: RuleParams) -> Select[Any]:
    """A pending external approval task created at or before the cutoff
    whose external_dispatch job has not succeeded (none, or still
    pending/running/paused)."""
    live = select(func.max(jobs.c.id)).where(
        _task_jobs("external_dispatch", jobs.c.status.in_(LIVE_JOB))
    )
    return _task_rule(
        p, _external_dispatch_pending_when, live.scalar_subquery(), tasks.c.created_at, literal("")
    )


def _trigger_waiting_no_execution_when(p: RuleParams, no_holder: ColumnElement[bool]) -> list[Any]:
    attempted = (
        select(executions.c.id)
        .select_from(executions.join(jobs, jobs.c.id == executions.c.job_id))
        .where(_task_jobs("trigger_dispatch"))
    )
    return [
        tasks.c.kind == "trigger",
        tasks.c.status == TaskStatus.WAITING.value,
        tasks.c.created_at <= p.cutoff,
        ~attempted.exists(),
    ]


def trigger_waiting_no_execution(p: RuleParams) -> Select[Any]:
    """A waiting trigger task created at or before the cutoff none of whose
    trigger_dispatch jobs has an attempt row (no job, or never started)."""
    return _task_rule(
        p,
        _trigger_waiting_no_execution_when,
        _latest_job("trigger_dispatch"),
        tasks.c.created_at,
        literal(""),
    )


def _subprocess_waiting_when(p: RuleParams, no_holder: ColumnElement[bool]) -> list[Any]:
    return [
        tasks.c.kind == "subprocess",
        tasks.c.status == TaskStatus.WAITING.value,
        tasks.c.created_at <= p.cutoff,
    ]


def subprocess_waiting(p: RuleParams) -> Select[Any]:
    """A waiting subprocess task (the parent) created at or before the
    cutoff; ``detail`` is the child instance id, if one was started."""
    child = instances.alias("child")
    child_id = (
        select(func.max(child.c.id))
        .where(
            child.c.parent_instance_id == tasks.c.instance_id, child.c.parent_task_id == tasks.c.id
        )
        .scalar_subquery()
    )
    newest = (
        select(func.max(jobs.c.id))
        .where(
            jobs.c.instance_id == tasks.c.instance_id,
            jobs.c.task_id == tasks.c.id,
            jobs.c.type.in_(["subprocess_spawn", "subprocess_join"]),
        )
        .scalar_subquery()
    )
    return _task_rule(p, _subprocess_waiting_when, newest, tasks.c.created_at, child_id)


def _delay_missing_wake_job_when(p: RuleParams, no_holder: ColumnElement[bool]) -> list[Any]:
    return [
        tasks.c.kind == "delay",
        tasks.c.status == TaskStatus.WAITING.value,
        ~exists().where(_task_jobs("delay_wake", jobs.c.status.in_([*LIVE_JOB, *BROKEN_JOB]))),
    ]


def delay_missing_wake_job(p: RuleParams) -> Select[Any]:
    """A waiting delay task with no delay_wake job that could still wake it
    (none pending, running, paused, failed or dead). Any age."""
    return _task_rule(p, _delay_missing_wake_job_when, null(), tasks.c.created_at, tasks.c.due_at)


def _overdue(
    p: RuleParams, kind_filter: ColumnElement[bool], status: str, job_type: str
) -> Select[Any]:
    """Driven from the jobs of ``job_type`` that are due (a range of
    ``ix_workflow_jobs_task``), then their task by primary key."""
    query = (
        select(*_task_row(p, jobs.c.id, jobs.c.run_at, jobs.c.status))
        .select_from(jobs.join(tasks, tasks.c.id == jobs.c.task_id))
        .where(
            jobs.c.type == job_type,
            jobs.c.task_id.isnot(None),
            jobs.c.status.in_(DUE_JOB),
            jobs.c.run_at <= p.due_before,
            jobs.c.instance_id == tasks.c.instance_id,
            kind_filter,
            tasks.c.status == status,
            *_task_scope(p),
        )
    )
    return _running(p, query)


def delay_overdue(p: RuleParams) -> Select[Any]:
    """A waiting delay task whose delay_wake job was due more than
    :data:`DUE_GRACE` ago and is still pending or running, or failed/dead."""
    return _overdue(p, tasks.c.kind == "delay", TaskStatus.WAITING.value, "delay_wake")


def task_timeout_overdue(p: RuleParams) -> Select[Any]:
    """A pending task whose task_timeout job was due more than
    :data:`DUE_GRACE` ago and is still pending or running, or failed/dead."""
    return _overdue(p, tasks.c.id.isnot(None), TaskStatus.PENDING.value, "task_timeout")


def _waiting_task_stuck_when(p: RuleParams, no_holder: ColumnElement[bool]) -> list[Any]:
    return [
        tasks.c.kind.in_(HUMAN_KINDS),
        tasks.c.status == TaskStatus.PENDING.value,
        tasks.c.created_at <= p.cutoff,
    ]


def waiting_task_stuck(p: RuleParams) -> Select[Any]:
    """A pending human task (approval, handle, catch, resubmit) created at
    or before the cutoff; ``detail`` is its assignee."""
    return _task_rule(p, _waiting_task_stuck_when, null(), tasks.c.created_at, tasks.c.assignee)


def _outbox(p: RuleParams, status: str, *where: ColumnElement[bool]) -> Select[Any]:
    """Outbox rows of ``status``, one row per instance (null: instance-less
    events), any instance status."""
    scope: list[ColumnElement[bool]] = []
    if p.tenants is not None:
        scope.append(outbox.c.tenant_id.in_(p.tenant_values()))
    if p.instance_id is not None:
        scope.append(outbox.c.instance_id == p.instance_value())
    if p.definition_key is not None:
        scope.append(outbox.c.definition_key == p.definition_value())
    return (
        select(
            *_columns(
                outbox.c.instance_id,
                null(),
                null(),
                null(),
                func.min(outbox.c.created_at),
                func.count(),
            )
        )
        .where(outbox.c.status == status, *where, *scope)
        .group_by(outbox.c.instance_id)
    )


def workflow_event_outbox_failed(p: RuleParams) -> Select[Any]:
    """Outbox rows marked failed (any age); ``detail``: how many."""
    return _outbox(p, "failed")


def workflow_event_outbox_pending(p: RuleParams) -> Select[Any]:
    """Outbox rows still pending, created at or before the cutoff."""
    return _outbox(p, "pending", outbox.c.created_at <= p.cutoff)


def _no_open_task() -> Any:
    return ~exists().where(tasks.c.instance_id == instances.c.id, tasks.c.status.in_(OPEN_TASK))


def _no_live_job() -> Any:
    return ~exists().where(jobs.c.instance_id == instances.c.id, jobs.c.status.in_(LIVE_JOB))


def instance_stalled(p: RuleParams) -> Select[Any]:
    """A running instance with no pending/waiting task and no job pending,
    running or paused; since its last update. Any age."""
    return select(
        *_columns(instances.c.id, null(), null(), null(), instances.c.updated_at, literal(""))
    ).where(_no_open_task(), _no_live_job(), *_scope(p))


RULES: tuple[Rule, ...] = (
    Rule(
        "token_task_mismatch",
        CRITICAL,
        0,
        "token",
        token_task_mismatch,
        True,
        when=_token_task_mismatch_when,
    ),
    Rule("external_dispatch_failed", CRITICAL, 1, "job", external_dispatch_failed, False),
    Rule("trigger_execution_failed", CRITICAL, 2, "job", trigger_execution_failed, False),
    Rule(
        "delay_missing_wake_job",
        CRITICAL,
        3,
        "job",
        delay_missing_wake_job,
        False,
        when=_delay_missing_wake_job_when,
    ),
    Rule("delay_overdue", CRITICAL, 4, "job", delay_overdue, False),
    Rule(
        "trigger_waiting_no_execution",
        CRITICAL,
        5,
        "job",
        trigger_waiting_no_execution,
        True,
        when=_trigger_waiting_no_execution_when,
    ),
    Rule("task_timeout_overdue", WARNING, 6, "job", task_timeout_overdue, False),
    Rule(
        "external_dispatch_pending",
        WARNING,
        7,
        "job",
        external_dispatch_pending,
        True,
        when=_external_dispatch_pending_when,
    ),
    Rule(
        "subprocess_waiting",
        WARNING,
        8,
        "stuck",
        subprocess_waiting,
        True,
        when=_subprocess_waiting_when,
    ),
    Rule(
        "waiting_task_stuck",
        WARNING,
        9,
        "stuck",
        waiting_task_stuck,
        True,
        when=_waiting_task_stuck_when,
    ),
    Rule("instance_stalled", CRITICAL, 10, "instance", instance_stalled, False),
    Rule(
        "workflow_event_outbox_failed",
        CRITICAL,
        11,
        "instance",
        workflow_event_outbox_failed,
        False,
    ),
    Rule(
        "workflow_event_outbox_pending",
        WARNING,
        12,
        "instance",
        workflow_event_outbox_pending,
        True,
    ),
)
RULES_BY_CODE = {r.code: r for r in RULES}
RULE_CODES = tuple(r.code for r in RULES)
LEVELS = (CRITICAL, WARNING)


def open_task_priorities(p: RuleParams, rules: Sequence[Rule] = RULES) -> Select[Any]:
    """``prio, task_id, instance_id`` of every open task in scope whose
    instance is running and in scope, ``prio`` being the priority of the
    first rule of ``rules`` with a ``when`` (in priority order) that reports
    it, NULL when none does — the rows of all those rules in one pass over
    the open tasks, each task once with the rule that wins it (what the
    de-duplication would keep of the rules' rows). The task's token is one
    outer join (the planner may hash or merge it) instead of one probe per
    task. ``OFFSET 0`` keeps the statement a subquery for the caller, which
    filters on ``prio``: inlined, every condition would be evaluated twice."""
    holder = tokens.alias("holder")
    no_holder = holder.c.id.is_(None)
    branches = [
        (and_(*rule.when(p, no_holder)), literal(rule.priority, Integer))
        for rule in sorted(rules, key=lambda r: r.priority)
        if rule.when is not None
    ]
    return (
        select(
            case(*branches, else_=null()).label("prio"),
            tasks.c.id.label("task_id"),
            tasks.c.instance_id.label("instance_id"),
        )
        .select_from(
            tasks.outerjoin(holder, _holds(holder)).join(
                instances, instances.c.id == tasks.c.instance_id
            )
        )
        .where(tasks.c.status.in_(OPEN_TASK), *_task_scope(p), *_scope(p))
        .offset(0)
    )


# ------------------------------------------- O-12 checks of one instance


def tokens_without_task(p: RuleParams) -> Select[Any]:
    """Active tokens that no open task holds (parked join tokens are not
    active, so never counted): ``task_id`` is the token id here."""
    return (
        select(
            *_columns(
                instances.c.id,
                tokens.c.id,
                tokens.c.node_key,
                null(),
                tokens.c.created_at,
                literal(""),
            )
        )
        .select_from(tokens.join(instances, instances.c.id == tokens.c.instance_id))
        .where(
            tokens.c.state == TokenState.ACTIVE.value,
            ~exists().where(
                tasks.c.instance_id == tokens.c.instance_id,
                tasks.c.token_id == tokens.c.id,
                tasks.c.status.in_(OPEN_TASK),
            ),
            *_scope(p),
        )
    )


def running_without_active_task(p: RuleParams) -> Select[Any]:
    return select(
        *_columns(instances.c.id, null(), null(), null(), instances.c.updated_at, literal(""))
    ).where(_no_open_task(), *_scope(p))


def running_without_active_token(p: RuleParams) -> Select[Any]:
    return select(
        *_columns(instances.c.id, null(), null(), null(), instances.c.updated_at, literal(""))
    ).where(
        ~exists().where(
            tokens.c.instance_id == instances.c.id, tokens.c.state == TokenState.ACTIVE.value
        ),
        *_scope(p),
    )


def unwakeable_waiting_tasks(p: RuleParams) -> Select[Any]:
    """Waiting tasks of instances with no pending task, that nothing can
    wake: no live job of the task (pending/running/paused), no running or
    suspended child instance started by it, no trigger call accepted and
    awaiting its callback (a succeeded trigger_dispatch job of the task), and
    no pending task at the same node. Reported only when every waiting task
    of the instance is such (a suspected deadlock)."""
    child = instances.alias("child")
    pending = tasks.alias("pending_task")
    awaiting_callback = exists().where(
        _task_jobs("trigger_dispatch", jobs.c.status == JobStatus.SUCCEEDED.value)
    )
    wakeable = or_(
        exists().where(
            jobs.c.instance_id == tasks.c.instance_id,
            jobs.c.task_id == tasks.c.id,
            jobs.c.status.in_(LIVE_JOB),
        ),
        exists().where(
            child.c.parent_instance_id == tasks.c.instance_id,
            child.c.parent_task_id == tasks.c.id,
            child.c.status.in_([InstanceStatus.RUNNING.value, InstanceStatus.SUSPENDED.value]),
        ),
        and_(tasks.c.kind == "trigger", awaiting_callback),
        exists().where(
            pending.c.instance_id == tasks.c.instance_id,
            pending.c.node_key == tasks.c.node_key,
            pending.c.status == TaskStatus.PENDING.value,
        ),
    )
    any_pending = exists().where(
        pending.c.instance_id == tasks.c.instance_id, pending.c.status == TaskStatus.PENDING.value
    )
    query = _open_tasks(
        p, tasks.c.status == TaskStatus.WAITING.value, ~wakeable, ~any_pending
    ).add_columns(*_task_row(p, null(), tasks.c.created_at, tasks.c.kind))
    return _running(p, query)
