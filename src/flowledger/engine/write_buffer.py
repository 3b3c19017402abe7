"""The engine's per-transaction write buffer (issue 15 item 2): it holds
the transaction's :class:`~flowledger.engine.store.plan.StepPlan` — the
engine trace rows (E-8), outbox events (E-10), form-write history (E-7),
token moves (E-4) and ledger jobs (L-1) of every step in one transaction —
which the engine store writes just before it commits (``step_commit``), each
table once, in the order the steps produced them.

A token parking at a join is planned with its move (``parks``) and
written in the same row of the moves. A task or a fork made with ids its
step reserved (``engine/store/reserved_ids.py``, PostgreSQL) is planned too
(``rows.tasks``, ``rows.forks``) and inserted with the other rows (a held
fork's token that moved since is inserted where it now is). Nothing writes
them behind a statement's back: a statement that reads or changes tasks,
forks or tokens is preceded, at its call site, by :func:`flush_for_read`
(the held rows and the token moves) or :func:`write_held` (the held rows
alone), and anything that reads or changes the instance's jobs by
:func:`flush_jobs`, so every read in the transaction sees them.

The buffer exists only inside a :meth:`~flowledger.db.database.Database.begin`
transaction (it registers as one of its pre-commit buffers; the first step
opened in the transaction opens it with its engine store,
:func:`open_buffer`); a step on any other connection writes at once, as
before. Nothing changes in what commits: the rows commit with the step's
other writes or roll back with them, and the instance row is still locked
before any job is written (L-13). In a job's step, the job's handler hands
its settlement to the store (``engine.step.JobStepSettlement``), which
takes the plan (:func:`take_plan`) and has the store write it with the
job's receipt and success. Which statement writes what is the store's
``step_commit`` (:mod:`~flowledger.engine.store.plan` names its shapes)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db.database import pre_commit
from flowledger.engine.store.plan import PlannedJob, StepPlan
from flowledger.engine.store.protocol import EngineStore
from flowledger.engine.store.writes import (
    FORKS_HELD_MAX,
    ForkRows,
    StepRows,
    write_form_writes,
    write_outbox,
    write_tasks,
    write_trace,
)
from flowledger.ledger.driver.protocol import LedgerDriver
from flowledger.ledger.models import JobSpec

_NAME = "engine_writes"


@dataclass
class WriteBuffer:
    conn: AsyncConnection
    store: EngineStore
    # what the transaction's steps write at its end (engine/store/plan.py):
    # the rows but the jobs — token moves (and the moved tokens that also
    # park there, a join not yet firing), outbox, form writes, trace, and
    # the rows made with reserved ids: tasks and forks, which go with the
    # other rows unless a read's call site writes them first (write_held,
    # flush_for_read) — and the jobs
    plan: StepPlan = field(default_factory=StepPlan)

    @property
    def rows(self) -> StepRows:
        """The plan's rows but its jobs."""
        return self.plan.rows

    def add_task(self, row: dict[str, Any]) -> None:
        """Hold the insert of task ``row`` (its ``id`` reserved): it is
        written with the other rows unless :meth:`write_held` writes it
        first."""
        self.rows.tasks.append(row)

    def holds_token(self, token_id: int) -> bool:
        """Whether token ``token_id`` is a held fork's, not yet inserted."""
        return any(row["id"] == token_id for row in self.rows.forks.tokens)

    def add_fork(
        self,
        frame: dict[str, Any],
        consume: tuple[int, str | None, datetime],
        tokens: list[dict[str, Any]],
    ) -> bool:
        """Hold a fork made with reserved ids: its ``frame`` row, the forking
        token to consume (id, the node it is consumed at, when) and its new
        token rows. False (nothing held) when the forking token is itself a
        held one, or too many are held already: write it now."""
        forks = self.rows.forks
        if len(forks.frames) >= FORKS_HELD_MAX or self.holds_token(consume[0]):
            return False
        forks.frames.append(frame)
        forks.consumes.append(consume)
        forks.tokens.extend(tokens)
        return True

    @property
    def holds_rows(self) -> bool:
        """Whether tasks or forks made with reserved ids are held."""
        return bool(self.rows.tasks or self.rows.forks.frames)

    async def write_held(self) -> None:
        """Insert the held tasks and forks now (a held fork's token that
        moved since is inserted where it now is): before a statement that
        reads or changes tasks, forks or tokens."""
        rows = self.rows
        if rows.tasks:
            tasks, rows.tasks = rows.tasks, []
            await write_tasks(self.conn, tasks)
        if rows.forks.frames:
            self.plan.fold_moves()
            forks, rows.forks = rows.forks, ForkRows()
            await self.store.forks_write(self.conn, forks)

    @property
    def moves(self) -> dict[int, str]:
        """The token moves not yet written (id → node)."""
        return self.rows.moves

    @property
    def parks(self) -> set[int]:
        """The moved tokens that also park where they moved."""
        return self.rows.parks

    def take_move(self, token_id: int) -> str | None:
        """Take the token's buffered move (and park) out, to be written with
        the token's next state change, which supersedes the park."""
        self.rows.parks.discard(token_id)
        return self.rows.moves.pop(token_id, None)

    async def flush_for_read(self) -> None:
        """Write what a read of tasks, forks or tokens must see: the held
        rows, then the buffered token moves."""
        await self.write_held()
        rows = self.rows
        if rows.moves:
            moves, parks = rows.moves, rows.parks
            rows.moves, rows.parks = {}, set()
            await self.store.token_moves_write(self.conn, moves, parks)

    async def flush_jobs(self) -> None:
        """Insert the planned jobs now (one insert per clock reading, and
        apart the jobs with reserved ids); the others' trace rows take the
        ids the inserts drew."""
        if self.plan.jobs:
            await self.store.step_jobs_write(self.conn, self.plan)

    def take_plan(self) -> StepPlan:
        """The plan, handed over (the buffer starts a new one): the caller
        has the store write it."""
        plan, self.plan = self.plan, StepPlan()
        return plan

    async def flush(self) -> None:
        """Write the plan now (the store's ``step_commit``)."""
        if self.plan:
            await self.store.step_commit(self.conn, self.take_plan())


def open_buffer(conn: AsyncConnection, store: EngineStore) -> WriteBuffer | None:
    """The write buffer of the transaction on ``conn``, opened with ``store``
    by the transaction's first step (None outside a
    :meth:`Database.begin` transaction: its steps write at once)."""
    registry = pre_commit(conn)
    if registry is None:
        return None
    found = registry.get(_NAME)
    if found is None:
        found = registry[_NAME] = WriteBuffer(conn, store)
    assert isinstance(found, WriteBuffer)
    return found


def buffer_of(conn: AsyncConnection) -> WriteBuffer | None:
    """The write buffer a step opened in the transaction on ``conn`` (None
    when none did: write at once)."""
    registry = pre_commit(conn)
    found = None if registry is None else registry.get(_NAME)
    assert found is None or isinstance(found, WriteBuffer)
    return found


async def add_trace(conn: AsyncConnection, row: dict[str, Any]) -> None:
    """Record one trace row: buffered when the transaction has a write buffer."""
    buffer = buffer_of(conn)
    if buffer is None:
        await write_trace(conn, [row])
    else:
        buffer.rows.trace.append(row)


async def add_outbox(conn: AsyncConnection, row: dict[str, Any]) -> None:
    """Record one outbox event: buffered when the transaction has a write buffer."""
    buffer = buffer_of(conn)
    if buffer is None:
        await write_outbox(conn, [row])
    else:
        buffer.rows.outbox.append(row)


async def add_form_write(conn: AsyncConnection, row: dict[str, Any]) -> None:
    """Record one form-write history row: buffered when the transaction has
    a write buffer."""
    buffer = buffer_of(conn)
    if buffer is None:
        await write_form_writes(conn, [row])
    else:
        buffer.rows.form_writes.append(row)


async def add_job(
    conn: AsyncConnection,
    spec: JobSpec,
    *,
    now: datetime,
    trace_row: dict[str, Any],
    ledger: LedgerDriver,
) -> None:
    """Enqueue one job and record its ``job_enqueued`` trace row (``trace_row``,
    whose ``job_id`` is filled in): both buffered when the transaction has a
    write buffer, else written at once (through ``ledger``)."""
    buffer = buffer_of(conn)
    if buffer is None:
        result = await ledger.job_insert(conn, spec, now=now)
        await write_trace(conn, [{**trace_row, "job_id": result.job_id}])
        return
    buffer.plan.jobs.append(PlannedJob(spec, now, trace_row, trace_row.get("job_id")))
    buffer.rows.trace.append(trace_row)


def take_plan(conn: AsyncConnection) -> StepPlan:
    """The plan of the transaction on ``conn``, handed over: the caller has
    the store write it (a job step's settlement,
    ``engine.step.JobStepSettlement``). Empty without a buffer."""
    buffer = buffer_of(conn)
    return StepPlan() if buffer is None else buffer.take_plan()


async def flush(conn: AsyncConnection) -> None:
    """Write what is buffered now (before a read that must see it)."""
    buffer = buffer_of(conn)
    if buffer is not None:
        await buffer.flush()


async def flush_for_read(conn: AsyncConnection) -> None:
    """Write the held tasks and forks and the buffered token moves now
    (before a statement that reads or changes tasks, forks or tokens)."""
    buffer = buffer_of(conn)
    if buffer is not None:
        await buffer.flush_for_read()


async def write_held(conn: AsyncConnection) -> None:
    """Write the held tasks and forks now (before a statement that reads or
    changes tasks, forks or tokens; the token moves stay buffered)."""
    buffer = buffer_of(conn)
    if buffer is not None:
        await buffer.write_held()


async def flush_jobs(conn: AsyncConnection) -> None:
    """Insert the buffered jobs now (before anything reads or changes the
    instance's jobs: the ledger's control calls, the engine's hooks)."""
    buffer = buffer_of(conn)
    if buffer is not None:
        await buffer.flush_jobs()
