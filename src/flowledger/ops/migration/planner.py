"""One instance's migration, computed (issue 30): pure — from the state
:mod:`~flowledger.ops.migration.reads` gave, the source and target
versions, the mapping, the field values and the users — the
:class:`~flowledger.ops.migration.model.InstanceResult` (the dry run's
document, which is also the run's) and, unless it is blocked, the
:class:`~flowledger.engine.store.migrate.InstanceMigration` that writes it.

What the result says, per instance:

- tokens: each live token on its mapped node (same id, same state);
- tasks: every open task on its mapped node; where the target node's
  assignee rule differs from the source node's, the rule is evaluated on
  the target (with the migrated form): open tasks of people it no longer
  names are skipped, people it adds who hold no task of that token there
  (open or done — an ``all`` approval keeps the approvals given) get a
  pending task (``taskId`` null until the run creates it);
- joins: per parked join, its mapped node, how many branches arrived of how
  many expected, and the nodes of the branches it still waits for — each
  of which must still reach the join on the target version;
- jobs: the unfinished jobs on their mapped nodes, ``runAt`` unchanged;
- timeouts (:mod:`.timeouts`): new ``task_timeout`` jobs (``jobId`` null
  until the run creates them) in ``jobs``, canceled ones left out; each
  task's ``dueAt`` says its timeout's due time;
- subprocesses: each waiting subprocess task, its mapped node and its
  running children (the target node must start the same definition);
- formAdded: the values set for required fields the instance lacks (a
  constant, or a template over the instance's form: :func:`field_value`).

Then the O-12 consistency rules and the O-16 health rules on that
prediction (:mod:`.predicted_checks`)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from flowledger.definitions.expressions import ExpressionError
from flowledger.definitions.model import ProcessDefinition
from flowledger.definitions.templates import placeholders, render, resolve
from flowledger.engine.assignee_rules import pick_assignees
from flowledger.engine.store.migrate import InstanceMigration, NewTask, NewTimeout
from flowledger.ops.migration import model as m
from flowledger.ops.migration.inputs import NodeIndex, PlanInputs
from flowledger.ops.migration.predicted_checks import O12_RULES, predicted_problems
from flowledger.ops.migration.reads import OPEN_TASKS, InstanceState
from flowledger.ops.migration.timeouts import new_task_due, plan_timeouts
from flowledger.states import InstanceStatus, TaskStatus, TokenState

HUMAN_TYPES = frozenset({"approval", "handle", "catch"})


@dataclass
class Planned:
    result: m.InstanceResult
    write: InstanceMigration | None


def field_value(given: Any, form: dict[str, Any], row: Any) -> Any:
    """The value of a new form field for one instance: a constant, or
    ``{"template": "…"}`` rendered over the instance (``form.*``,
    ``instanceId``, ``initiator``); a template that is one placeholder keeps
    the value's type."""
    if not (isinstance(given, dict) and set(given) == {"template"}):
        return given
    text = str(given["template"])
    values = {"form": form, "instanceId": int(row.id), "initiator": row.initiator}
    paths = placeholders(text)
    if len(paths) == 1 and text.strip() in (f"{{{{{paths[0]}}}}}", f"{{{{ {paths[0]} }}}}"):
        return resolve(values, paths[0])
    return render(text, values)


def skip_comment(target_version: int, reason: str) -> str:
    return f"[Admin migration to version {target_version}] {reason}"


def reaches(defn: ProcessDefinition | NodeIndex, start: str, goal: str) -> bool:
    """Whether ``goal`` can be reached from ``start`` along ``defn``'s edges."""
    seen, todo = {start}, [start]
    while todo:
        key = todo.pop()
        if key == goal:
            return True
        for edge in defn.outgoing(key):
            if edge.to not in seen:
                seen.add(edge.to)
                todo.append(edge.to)
    return False


class _Planner:
    def __init__(self, state: InstanceState, inputs: PlanInputs, now: datetime) -> None:
        self.state = state
        self.inputs = inputs
        self.now = now
        row = state.instance
        self.row = row
        self.source = inputs.index(inputs.sources[int(row.definition_version)])
        self.target = inputs.index(inputs.target)
        self.result = m.InstanceResult(
            int(row.id), int(row.definition_version), inputs.target.version
        )
        self.renamed: dict[str, str] = {}
        self._blocked_nodes: set[tuple[str, str]] = set()
        self.form = dict(row.form_data or {})
        self.task_due: dict[int, datetime | None] = {}
        self.new_timeouts: list[NewTimeout] = []
        self.cancel_jobs: list[int] = []
        self.added: list[NewTask] = []

    def block_once(self, code: str, node: str, message: str, **where: Any) -> None:
        if (code, node) not in self._blocked_nodes:
            self._blocked_nodes.add((code, node))
            self.result.block(code, message, nodeKey=node, **where)

    def use(self, key: str) -> str:
        """The target node of source node ``key`` (``key`` itself when unmapped, blocked)."""
        new = self.inputs.mapping.get(key)
        if new is None or not self.target.has_node(new):
            self.block_once(m.NODE_NOT_MAPPED, key, f"node {key!r} has no target node")
            return key
        if self.source.has_node(key) and self.source.node(key).type != self.target.node(new).type:
            self.block_once(
                m.NODE_TYPE_CHANGED,
                key,
                f"node {key!r} ({self.source.node(key).type}) maps to {new!r} "
                f"({self.target.node(new).type})",
                targetNode=new,
            )
        if new != key:
            self.renamed[key] = new
        return new

    def status(self) -> None:
        status = self.row.status
        if status == InstanceStatus.SUSPENDED:
            self.result.block(m.INSTANCE_SUSPENDED, "the instance is suspended")
        elif status != InstanceStatus.RUNNING:
            self.result.block(m.NOT_RUNNING, f"the instance is {status}")
        if int(self.row.definition_version) == self.inputs.target.version:
            self.result.block(m.ALREADY_ON_TARGET, "the instance is on the target version")

    def form_fields(self) -> None:
        values = self.inputs.field_values
        for spec in self.target.form.fields:
            if not spec.required or self.form.get(spec.key) is not None:
                continue
            value = field_value(values.get(spec.key), self.form, self.row)
            if value is None or value == "":
                self.result.block(
                    m.REQUIRED_FIELD_MISSING,
                    f"the target requires {spec.key!r} and no value is given",
                    field=spec.key,
                )
                continue
            self.form[spec.key] = value
            self.result.form_added[spec.key] = value
        if self.result.form_added:
            self.result.changes.append(
                {"kind": m.FORM_FIELDS_ADDED, "fields": sorted(self.result.form_added)}
            )

    def tokens(self) -> dict[int, str]:
        nodes: dict[int, str] = {}
        for token in self.state.tokens:
            nodes[int(token.id)] = self.use(token.node_key)
            self.result.tokens.append(
                {"tokenId": int(token.id), "nodeKey": nodes[int(token.id)], "state": token.state}
            )
        return nodes

    def joins(self, token_nodes: dict[int, str]) -> None:
        parked: dict[tuple[str, int], list[Any]] = defaultdict(list)
        for token in self.state.tokens:
            stack = list(token.fork_stack or [])
            if token.state == TokenState.PARKED and stack:
                parked[(token.node_key, int(stack[-1]))].append(token)
        for (node, frame_id), arrived in sorted(parked.items()):
            frame = self.state.forks.get(frame_id)
            expected = int(frame.expected) if frame is not None else len(arrived)
            pending = [
                t
                for t in self.state.tokens
                if t.state == TokenState.ACTIVE and frame_id in (t.fork_stack or [])
            ]
            join = token_nodes[int(arrived[0].id)]
            waiting = sorted(token_nodes[int(t.id)] for t in pending)
            if len(arrived) + len(pending) < expected:
                self.block_once(
                    m.JOIN_BRANCH_MISSING,
                    node,
                    f"join {node!r} expects {expected} branches but only "
                    f"{len(arrived) + len(pending)} are live",
                )
            for token in pending:
                at = token_nodes[int(token.id)]
                known = self.target.has_node(at) and self.target.has_node(join)
                if known and not reaches(self.target, at, join):
                    self.block_once(
                        m.JOIN_BRANCH_MISSING,
                        node,
                        f"the branch at {at!r} no longer reaches join {join!r}",
                        branchNode=at,
                    )
            self.result.joins.append(
                {
                    "nodeKey": join,
                    "expected": expected,
                    "arrived": len(arrived),
                    "waitingFor": waiting,
                }
            )

    def frames(self) -> dict[int, str]:
        out: dict[int, str] = {}
        for frame_id, frame in sorted(self.state.forks.items()):
            new = self.inputs.mapping.get(frame.node_key)
            if new is not None and new != frame.node_key and self.target.has_node(new):
                out[frame_id] = new
        return out

    def tasks(self) -> tuple[dict[int, str], list[int], list[NewTask]]:
        open_tasks = [t for t in self.state.tasks if t.status in OPEN_TASKS]
        task_nodes: dict[int, str] = {}
        for task in open_tasks:
            new = self.use(task.node_key)
            if new != task.node_key:
                task_nodes[int(task.id)] = new
        skip, added = self._assignees(open_tasks)
        self.added = added
        timeouts = plan_timeouts(
            open_tasks,
            task_nodes,
            skip,
            self.state.jobs,
            source=self.source,
            target=self.target,
            now=self.now,
        )
        self.task_due = timeouts.task_due
        self.new_timeouts = timeouts.new_timeouts
        self.cancel_jobs = timeouts.cancel_jobs
        self.result.changes.extend(timeouts.changes)
        for task in open_tasks:
            if int(task.id) in skip:
                continue
            due = self.task_due.get(int(task.id), task.due_at)
            self.result.tasks.append(
                {
                    "taskId": int(task.id),
                    "tokenId": None if task.token_id is None else int(task.token_id),
                    "nodeKey": task_nodes.get(int(task.id), task.node_key),
                    "kind": task.kind,
                    "assignee": task.assignee,
                    "status": task.status,
                    "dueAt": None if due is None else due.isoformat(),
                }
            )
        for created in added:
            self.result.tasks.append(
                {
                    "taskId": None,
                    "tokenId": created.token_id,
                    "nodeKey": created.node_key,
                    "kind": created.kind,
                    "assignee": created.assignee,
                    "status": TaskStatus.PENDING.value,
                    "dueAt": None if created.due_at is None else created.due_at.isoformat(),
                }
            )
        return task_nodes, sorted(skip), added

    def _assignees(self, open_tasks: list[Any]) -> tuple[set[int], list[NewTask]]:
        groups: dict[tuple[int, str], list[Any]] = defaultdict(list)
        for task in open_tasks:
            if task.status == TaskStatus.PENDING and task.kind in HUMAN_TYPES and task.token_id:
                groups[(int(task.token_id), task.node_key)].append(task)
        skip: set[int] = set()
        added: list[NewTask] = []
        for (token_id, key), group in sorted(groups.items()):
            new = self.inputs.mapping.get(key)
            if new is None or not self.source.has_node(key) or not self.target.has_node(new):
                continue
            before, after = self.source.node(key), self.target.node(new)
            memo = self.inputs.memo
            same = memo.get(("same", int(self.row.definition_version), key, new))
            if same is None:
                same = before.type != after.type or before.assignees == after.assignees
                memo[("same", int(self.row.definition_version), key, new)] = same
            if same:
                continue
            fixed = after.assignees is None or not after.assignees.expr
            people = memo.get(("people", new, self.row.tenant_id)) if fixed else None
            if people is None:
                try:
                    people = pick_assignees(
                        after.assignees,
                        self.inputs.users,
                        tenant=self.row.tenant_id,
                        form=self.form,
                        initiator=self.row.initiator,
                    )
                except ExpressionError:
                    people = []
                if fixed:  # users and roles only: the same for every instance of the tenant
                    memo[("people", new, self.row.tenant_id)] = people
            if not people:
                self.block_once(m.NO_ASSIGNEE, key, f"no assignee resolves for {new!r}")
                continue
            held = {
                t.assignee
                for t in self.state.tasks
                if t.token_id is not None and int(t.token_id) == token_id and t.node_key == key
            }
            removed = sorted({t.assignee for t in group if t.assignee not in people})
            skip.update(int(t.id) for t in group if t.assignee not in people)
            new_people = [p for p in people if p not in held]
            due = new_task_due(after, group[0].kind, self.now)
            added.extend(NewTask(new, token_id, group[0].kind, p, due) for p in new_people)
            if removed or new_people:
                self.result.changes.append(
                    {"kind": m.ASSIGNEE, "nodeKey": new, "removed": removed, "added": new_people}
                )
        return skip, added

    def jobs(self) -> dict[int, str]:
        job_nodes: dict[int, str] = {}
        canceled = set(self.cancel_jobs)
        for job in self.state.jobs:
            if int(job.id) in canceled:
                continue
            node = job.node_key
            if node is not None:
                new = self.use(node)
                if new != node:
                    job_nodes[int(job.id)] = new
                node = new
            self.result.jobs.append(
                {
                    "jobId": int(job.id),
                    "type": job.type,
                    "nodeKey": node,
                    "taskId": None if job.task_id is None else int(job.task_id),
                    "runAt": job.run_at.isoformat(),
                    "status": job.status,
                }
            )
        new_jobs: list[tuple[int | None, str, datetime]] = [
            (t.task_id, t.node_key, t.due_at) for t in self.new_timeouts
        ]
        new_jobs += [(None, t.node_key, t.due_at) for t in self.added if t.due_at is not None]
        for task_id, node_key, due in new_jobs:
            self.result.jobs.append(
                {
                    "jobId": None,
                    "type": "task_timeout",
                    "nodeKey": node_key,
                    "taskId": task_id,
                    "runAt": due.isoformat(),
                    "status": "pending",
                }
            )
        return job_nodes

    def subprocesses(self) -> None:
        for task in self.state.tasks:
            if task.kind != "subprocess" or task.status not in OPEN_TASKS:
                continue
            key = task.node_key
            new = self.inputs.mapping.get(key)
            before = self.source.node(key) if self.source.has_node(key) else None
            after = self.target.node(new) if new and self.target.has_node(new) else None
            if (
                before is None
                or after is None
                or after.type != "subprocess"
                or after.definition_key != before.definition_key
            ):
                self.block_once(
                    m.SUBPROCESS_NOT_MIGRATABLE,
                    key,
                    f"subprocess node {key!r} does not start the same definition on the target",
                )
            self.result.subprocesses.append(
                {
                    "taskId": int(task.id),
                    "nodeKey": new or key,
                    "childInstanceIds": self.state.children.get(int(task.id), []),
                }
            )

    def checks(self) -> None:
        if self.result.reasons:
            return  # the prediction of a blocked instance is not checked further
        for problem in predicted_problems(self.result, self.target, self.state.finished_jobs):
            spec = "O-12" if problem["rule"] in O12_RULES else "O-16"
            self.result.block(
                m.CONSISTENCY,
                f"the migrated instance would break {spec} rule {problem['rule']}",
                **problem,
            )


def plan_instance(state: InstanceState, inputs: PlanInputs, *, now: datetime) -> Planned:
    """The result of migrating ``state``'s instance, and its write unless blocked."""
    p = _Planner(state, inputs, now)
    p.status()
    p.form_fields()
    token_nodes = p.tokens()
    p.joins(token_nodes)
    task_nodes, skip, added = p.tasks()
    job_nodes = p.jobs()
    p.subprocesses()
    p.checks()
    result = p.result
    if p.renamed:
        result.changes.append(
            {
                "kind": m.NODE_RENAMED,
                "nodes": [{"from": k, "to": v} for k, v in sorted(p.renamed.items())],
            }
        )
    if result.reasons:
        result.verdict = m.BLOCKED
        return Planned(result, None)
    result.verdict = m.CHANGED if result.changes else m.OK
    row = state.instance
    moved = {k: v for k, v in token_nodes.items() if v != _node_of(state.tokens, k)}
    write = InstanceMigration(
        instance_id=int(row.id),
        tenant_id=row.tenant_id,
        definition_key=row.definition_key,
        trace_id=row.trace_id,
        definition_id=inputs.target.id,
        definition_version=inputs.target.version,
        snapshot=inputs.target.source,
        form_data=p.form,
        now=now,
        actor=inputs.actor,
        token_nodes=moved,
        frame_nodes=p.frames(),
        task_nodes=task_nodes,
        job_nodes=job_nodes,
        skip_tasks=skip,
        skip_comment=skip_comment(inputs.target.version, inputs.reason),
        new_tasks=added,
        new_timeouts=p.new_timeouts,
        task_due=p.task_due,
        cancel_jobs=p.cancel_jobs,
        trace_detail={
            "migrationId": inputs.migration_id,
            "fromVersion": result.from_version,
            "toVersion": result.to_version,
            "mapping": inputs.mapping,
            "actor": inputs.actor,
            "reason": inputs.reason,
            "verdict": result.verdict,
        },
    )
    return Planned(result, write)


def _node_of(tokens: list[Any], token_id: int) -> str:
    return next(str(t.node_key) for t in tokens if int(t.id) == token_id)
