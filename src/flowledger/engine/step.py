"""One engine step: the transaction, its clock reading, the locked instance
and its frozen definition, and the writes every step makes — engine trace
rows (E-8), outbox events (E-10) and ledger jobs (L-13: instance row locked
first, jobs after) — and the engine's hooks the step runs with
(:class:`~flowledger.engine.hooks.EngineHooks`, generic in the step: the
hooks' module knows no step, so it sits below this one). Trace rows,
outbox rows and jobs go to the transaction's write buffer
(:mod:`~flowledger.engine.write_buffer`), written once per table just
before the commit (issue 15 item 2) — or, in a job's step, with the job's
settlement (:class:`JobStepSettlement`).

The step reads the instance row without its frozen snapshot: the parsed
definition of a version comes from the engine's
:class:`~flowledger.engine.snapshots.SnapshotCache`, and the snapshot
column is read only when the cache does not hold that version yet (E-2).
Statements are built once, with bound parameters."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import bindparam, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db.database import pre_commit
from flowledger.db.engine_schema import workflow_instances, workflow_tasks
from flowledger.definitions.model import ProcessDefinition
from flowledger.engine.errors import InstanceNotFound, TaskNotFound
from flowledger.engine.hooks import EngineHooks
from flowledger.engine.job_types import engine_job_type
from flowledger.engine.snapshots import SnapshotCache
from flowledger.engine.store.instance_end import Ending, InstanceEnd
from flowledger.engine.store.job_lock import (
    INSTANCE_LOCK,
    STEP_COLUMNS,
    FinishedTask,
    TaskFinish,
)
from flowledger.engine.store.plan import PlannedSettlement
from flowledger.engine.store.protocol import EngineStore
from flowledger.engine.store.reserved_ids import Reserved, take_reserved
from flowledger.engine.write_buffer import (
    add_job,
    add_outbox,
    add_trace,
    flush_jobs,
    open_buffer,
    take_plan,
    write_held,
)
from flowledger.ledger.models import EnqueueResult, Fence, JobSpec, Outcome
from flowledger.ledger.receipts import StepLock, StepSettlement
from flowledger.states import InstanceStatus, JobTransition, transition_sources
from flowledger.telemetry import dispatch_key, step_span, tracing_on

if TYPE_CHECKING:
    from opentelemetry.trace import Span


@dataclass
class Step:
    conn: AsyncConnection
    now: datetime
    actor: str
    instance: dict[str, Any]
    defn: ProcessDefinition
    # the engine's hooks (failure policies, instance-ended): NO_HOOKS for none;
    # generic in the step (engine/hooks.py imports nothing that knows a step)
    hooks: EngineHooks[Step]
    # how the step's writes are sent: the engine's store, chosen once
    store: EngineStore
    finished: bool = False
    # the ledger job running this step, if one is (kept out of L-22 cleanup)
    job_id: int | None = None
    # ids reserved for this step's new tasks, fork frames, branch tokens and
    # jobs (engine/store/reserved_ids.py; PostgreSQL), ascending per kind
    reserved: Reserved = field(default_factory=Reserved)
    # the step's OpenTelemetry span (None: tracing is off; flowledger.telemetry)
    span: Span | None = None

    def take_task_id(self) -> int | None:
        """The next reserved task id, or None (the insert draws one)."""
        return self.reserved.tasks.pop(0) if self.reserved.tasks else None

    def take_job_id(self) -> int | None:
        """The next reserved job id, or None (the insert draws one)."""
        return self.reserved.jobs.pop(0) if self.reserved.jobs else None

    def forgo_reserved_job_ids(self) -> None:
        """A job of this step draws its id at its insert (one with an
        idempotencyKey, or one inserted at once): the ids reserved for later
        jobs were drawn before it, so they go unused (gaps) and every later
        job draws its own — the instance's job ids keep ascending in the
        order its jobs were made."""
        self.reserved.jobs.clear()

    async def insert_job_now(self, spec: JobSpec) -> EnqueueResult:
        """Insert one job at once (a caller that needs its id, or to know
        whether its idempotencyKey named a job already). The jobs this step
        buffered before go first, and the ids reserved for later ones are
        forgone, so job ids ascend in the order the step made its jobs, on
        both backends."""
        await flush_jobs(self.conn)
        self.forgo_reserved_job_ids()
        if self.span is not None and spec.operation_key is None:
            job_type = spec.type if isinstance(spec.type, str) else spec.type.name
            spec = replace(spec, operation_key=self._dispatched(job_type, spec.node_key))
        return await self.store.ledger.job_insert(self.conn, spec, now=self.now)

    def _dispatched(self, job_type: str, node_key: str | None) -> str | None:
        """The operationKey naming the ``job.dispatch`` span of a job this
        traced step makes (flowledger.telemetry)."""
        return dispatch_key(self.span, job_type, instance_id=self.instance_id, node_key=node_key)

    def take_fork_ids(self, branches: int) -> tuple[int, list[int]] | None:
        """A reserved frame id and ``branches`` reserved token ids for a fork,
        or None (too few reserved: the fork's insert draws its own)."""
        held = self.reserved
        if not held.forks or len(held.tokens) < branches:
            return None
        tokens, held.tokens = held.tokens[:branches], held.tokens[branches:]
        return held.forks.pop(0), tokens

    def opened(self) -> Step:
        """This step, with its transaction's write buffer opened (inside a
        :meth:`~flowledger.db.database.Database.begin` transaction)."""
        open_buffer(self.conn, self.store)
        if tracing_on():  # flowledger.telemetry: the step's span, ended at the commit
            self.span = step_span(
                self.trace_id,
                self.instance_id,
                self.instance["definition_key"],
                job_id=self.job_id,
                commit=pre_commit(self.conn),
            )
        return self

    @property
    def instance_id(self) -> int:
        return int(self.instance["id"])

    @property
    def trace_id(self) -> str:
        return str(self.instance["trace_id"])

    @property
    def form(self) -> dict[str, Any]:
        form: dict[str, Any] = self.instance["form_data"]
        return form

    def _trace_row(
        self,
        event: str,
        *,
        node_key: str | None = None,
        token_id: int | None = None,
        task_id: int | None = None,
        job_id: int | None = None,
        detail: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        return {
            "instance_id": self.instance_id,
            "trace_id": self.trace_id,
            "event": event,
            "node_key": node_key,
            "token_id": token_id,
            "task_id": task_id,
            "job_id": job_id,
            "detail": detail,
            "created_at": self.now,
        }

    async def trace(
        self,
        event: str,
        *,
        node_key: str | None = None,
        token_id: int | None = None,
        task_id: int | None = None,
        job_id: int | None = None,
        detail: dict[str, Any] | None = None,
    ) -> None:
        if self.span is not None:
            self.span.add_event(event, {"workflow.node_id": node_key} if node_key else None)
        await add_trace(
            self.conn,
            self._trace_row(
                event,
                node_key=node_key,
                token_id=token_id,
                task_id=task_id,
                job_id=job_id,
                detail=detail,
            ),
        )

    async def emit(self, event_type: str, payload: dict[str, Any]) -> None:
        body = {
            "instanceId": self.instance_id,
            "definitionKey": self.instance["definition_key"],
            **payload,
        }
        await add_outbox(
            self.conn,
            {
                "tenant_id": self.instance["tenant_id"],
                "instance_id": self.instance_id,
                "definition_key": self.instance["definition_key"],
                "event_type": event_type,
                "payload": body,
                "status": "pending",
                "trace_id": self.trace_id,
                "created_at": self.now,
            },
        )
        await self.trace("event_emitted", detail={"eventType": event_type})

    async def enqueue(
        self,
        job_type: str,
        *,
        payload: dict[str, Any] | None = None,
        task_id: int | None = None,
        node_key: str | None = None,
        run_at: datetime | None = None,
        idempotency_key: str | None = None,
        instance_id: int | None = None,
    ) -> None:
        """Enqueue a job of this instance (or, for a child's join, of its
        parent), with its ``job_enqueued`` trace row. In a buffered
        transaction both are written with the step's other buffered rows
        (the job's id is in the trace row); a reader of the instance's jobs
        in the same step flushes first (:func:`~flowledger.engine.
        write_buffer.flush_jobs`)."""
        spec = JobSpec(
            type=engine_job_type(job_type),
            payload=payload or {},
            run_at=run_at,
            idempotency_key=idempotency_key,
            trace_id=self.trace_id,
            tenant_id=self.instance["tenant_id"],
            instance_id=self.instance_id if instance_id is None else instance_id,
            task_id=task_id,
            node_key=node_key,
            operation_key=None if self.span is None else self._dispatched(job_type, node_key),
        )
        # a reserved id names the job in its trace row before it is inserted
        # (a job with an idempotencyKey may turn out to be an existing one)
        if idempotency_key is not None:
            self.forgo_reserved_job_ids()
        job_id = self.take_job_id()
        await add_job(
            self.conn,
            spec,
            now=self.now,
            trace_row=self._trace_row(
                "job_enqueued",
                node_key=node_key,
                task_id=task_id,
                job_id=job_id,
                detail={"type": job_type},
            ),
            ledger=self.store.ledger,
        )

    def _ending(self, status: InstanceStatus, job_types: Collection[str]) -> Ending:
        return Ending(
            status=status.value,
            now=self.now,
            job_types=job_types,
            job_statuses=_CLEANUP_STATUSES,
            keep_job_id=self.job_id,
            also=self.hooks.instance_ended_when if self.hooks.instance_ended else None,
        )

    def _ended(self, status: InstanceStatus) -> None:
        self.instance.update(status=status, finished_at=self.now, updated_at=self.now)
        if self.span is not None:
            self.span.add_event("instance_ended", {"workflow.status": str(status)})
            self.span.set_attribute("workflow.status", str(status))

    async def end_instance(
        self, status: InstanceStatus, *, job_types: Collection[str] = ()
    ) -> InstanceEnd:
        """Set the instance's terminal ``status`` (finished now); its open
        tasks and its live jobs of ``job_types`` other than this step's (L-22's
        cleanup cancels those), and whether the instance-ended hook's
        condition holds, read in the same round trip on PostgreSQL."""
        ending = self._ending(status, job_types)
        await write_held(self.conn)  # the open tasks it ends may be held
        ended = await self.store.instance_end(self.conn, self.instance_id, ending)
        self._ended(status)
        return ended

    async def end_with_last_token(
        self,
        status: InstanceStatus,
        token_id: int,
        *,
        at_node: str | None,
        job_types: Collection[str] = (),
    ) -> InstanceEnd | None:
        """Consume token ``token_id`` (moved to ``at_node``, when given) and,
        when it was the instance's last live token, end the instance as
        :meth:`end_instance` does (one round trip on PostgreSQL); None when
        another token is live."""
        ending = self._ending(status, job_types)
        await write_held(self.conn)  # the live tokens and open tasks may be held
        ended = await self.store.instance_end_with_last_token(
            self.conn, self.instance_id, ending, token_id=token_id, at_node=at_node
        )
        if ended is not None:
            self._ended(status)
        return ended

    async def set_instance(self, **values: Any) -> None:
        values["updated_at"] = self.now
        await self.conn.execute(_SET_INSTANCE, {"b_instance_id": self.instance_id, **values})
        self.instance.update(values)


# the job statuses an instance's cleanup cancels from (L-22)
_CLEANUP_STATUSES = tuple(
    sorted(s.value for s in transition_sources(JobTransition.CANCEL_FOR_INSTANCE))
)
# the SET columns are the parameters' keys (one compiled form per key set)
_SET_INSTANCE = update(workflow_instances).where(
    workflow_instances.c.id == bindparam("b_instance_id")
)
_SNAPSHOT = select(workflow_instances.c.snapshot).where(
    workflow_instances.c.id == bindparam("instance_id")
)


async def lock_instance(
    conn: AsyncConnection, instance_id: int, store: EngineStore | None = None
) -> dict[str, Any]:
    """Lock the instance row (always the first lock of a step, L-13); the row
    without its snapshot column. With a step's ``store`` that reserves ids
    for the step (PostgreSQL) the row also carries them
    (:mod:`~flowledger.engine.store.reserved_ids`). Rows an earlier step of
    the transaction holds are written first (this step may read them)."""
    await write_held(conn)
    statement = INSTANCE_LOCK if store is None else store.lock_reserving(INSTANCE_LOCK)
    row = (await conn.execute(statement, {"lock_instance_id": instance_id})).mappings().first()
    if row is None:
        raise InstanceNotFound(f"instance {instance_id} not found", field="instanceId")
    return dict(row)


_LOCK_TASK_INSTANCE = (
    select(*STEP_COLUMNS)
    .where(
        workflow_instances.c.id
        == select(workflow_tasks.c.instance_id)
        .where(workflow_tasks.c.id == bindparam("task_id"))
        .scalar_subquery()
    )
    .with_for_update(of=workflow_instances)
)


async def lock_task_instance(
    conn: AsyncConnection, task_id: int, store: EngineStore
) -> dict[str, Any]:
    """Lock the instance row of task ``task_id`` in one statement — the first
    lock of the step (L-13): the task row is only read, not locked. The row
    is without its snapshot column; where ``store`` reserves ids for the
    step (PostgreSQL) it also carries them
    (:mod:`~flowledger.engine.store.reserved_ids`)."""
    statement = store.lock_reserving(_LOCK_TASK_INSTANCE)
    await write_held(conn)  # the task may be one an earlier step holds
    row = (await conn.execute(statement, {"task_id": task_id})).mappings().first()
    if row is None:
        raise TaskNotFound(f"task {task_id} not found", field="taskId")
    return dict(row)


class JobStepLock(StepLock):
    """A job step's ``lock_first``: its store's first statement
    (:meth:`~flowledger.engine.store.protocol.EngineStore.job_step_lock` —
    the instance row, then ``finish`` if given, then the job's fenced lock
    and receipt). It keeps the instance row, so the engine step opened after
    it in the same transaction (``open_step(..., locked=lock.row)``) does
    not read the row a second time, and the task ``finish`` wrote."""

    def __init__(
        self, store: EngineStore, instance_id: int, *, finish: TaskFinish | None = None
    ) -> None:
        self.store = store
        self.instance_id = instance_id
        self.finish = finish
        self.row: dict[str, Any] | None = None
        # what ``finish`` wrote (None: nothing, or no finish)
        self.finished: FinishedTask | None = None

    async def lock(
        self,
        conn: AsyncConnection,
        fence: Fence,
        operation_key: str,
        step_key: str,
        *,
        now: datetime,
    ) -> tuple[bool, Any]:
        locked = await self.store.job_step_lock(
            conn, self.instance_id, fence, operation_key, step_key, now=now, finish=self.finish
        )
        if locked.instance is None:
            raise InstanceNotFound(f"instance {self.instance_id} not found", field="instanceId")
        self.row, self.finished = locked.instance, locked.finished
        return locked.receipt_found, locked.receipt_result


class JobStepSettlement(StepSettlement):
    """A job step's settlement, handed to its store: the step's plan, its
    receipt and its job's plain success
    (:meth:`~flowledger.engine.store.protocol.EngineStore.step_commit`,
    shape ``settle``: the jobs, then one statement on PostgreSQL)."""

    def __init__(self, store: EngineStore) -> None:
        self.store = store

    async def settle(
        self,
        conn: AsyncConnection,
        fence: Fence,
        operation_key: str,
        step_key: str,
        result: Any,
        outcome: Outcome,
        *,
        now: datetime,
        started_at: datetime | None,
    ) -> bool:
        settlement = PlannedSettlement(
            fence, operation_key, step_key, result, outcome, now, started_at
        )
        return await self.store.step_commit(conn, take_plan(conn), settlement)


async def open_step(
    conn: AsyncConnection,
    instance_id: int,
    *,
    now: datetime,
    actor: str,
    snapshots: SnapshotCache,
    hooks: EngineHooks[Step],
    store: EngineStore,
    job_id: int | None = None,
    locked: dict[str, Any] | None = None,
) -> Step:
    """Lock the instance and open a step on it with the engine's ``hooks``;
    ``job_id`` names the ledger job this step runs in, if any. ``locked`` is
    the instance row when this transaction already locked it first (a job
    step's ``lock_first``)."""
    if locked is not None and int(locked["id"]) != instance_id:
        raise ValueError(f"the locked row is instance {locked['id']}, not {instance_id}")
    instance = locked if locked is not None else await lock_instance(conn, instance_id, store)
    reserved = take_reserved(instance)  # a lock that reserved them (not a job's first lock)
    defn = snapshots.cached(instance["definition_id"])
    if defn is None:
        snapshot = instance.get("snapshot")
        if snapshot is None:
            found = await conn.execute(_SNAPSHOT, {"instance_id": instance_id})
            snapshot = found.scalar_one()
        defn = snapshots.get(instance["definition_id"], snapshot)
    return Step(
        conn=conn,
        now=now,
        actor=actor,
        instance=instance,
        defn=defn,
        hooks=hooks,
        store=store,
        job_id=job_id,
        reserved=reserved,
    ).opened()
