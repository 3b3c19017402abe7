"""The engine's per-transaction write buffer (issue 15 item 2): the engine
trace rows (E-8), outbox events (E-10), form-write history (E-7), token moves
(E-4) and ledger jobs (L-1) of every step in one transaction, written just
before it commits — each table once, in the order the steps produced them.

A token parking at a join is buffered with its move (``parks``) and
written in the same row of the moves. A task or a fork made with ids its
step reserved (``engine/store/reserved_ids.py``, PostgreSQL) is held too
(``rows.tasks``, ``rows.forks``) and inserted with the other rows (a held
fork's token that moved since is inserted where it now is). Nothing writes
them behind a statement's back: a statement that reads or changes tasks,
forks or tokens is preceded, at its call site, by :func:`flush_for_read`
(the held rows and the token moves) or :func:`write_held` (the held rows
alone), so every read in the transaction sees them.

The buffer exists only inside a :meth:`~flowledger.db.database.Database.begin`
transaction (it registers as one of its pre-commit buffers; the first step
opened in the transaction opens it with its engine store,
:func:`open_buffer`); a step on any other connection writes at once, as
before. What the buffer holds but its jobs is a
:class:`~flowledger.engine.store.writes.StepRows`; how it is written is the
engine store's (:mod:`~flowledger.engine.store`). A read in the step that must see
buffered rows flushes first (:func:`flush`; the task and token queries call
:func:`flush_for_read`, :func:`flush_jobs` comes before anything that reads
or changes the instance's jobs). Nothing changes in what commits: the rows commit with the
step's other writes or roll back with them, and the instance row is still
locked before any job is written (L-13).

A job whose id the step reserved (PostgreSQL; a job without an
idempotencyKey) is named by that id in its ``job_enqueued`` trace row from
the start. The jobs go first, in one ``jobs_insert`` of the store's ledger
driver (``ids=`` the reserved ones), so that the trace rows of the others
carry the ids the insert drew; then the rest with the store's
``step_rows_write`` (one statement on PostgreSQL). When every buffered job
has a reserved id, the store writes the jobs and the rest together
(``jobs_and_step_rows_write``: one statement on PostgreSQL). In a job's
step, the job's handler hands its settlement to the store
(``engine.step.JobStepSettlement``), which takes the buffered rows
(:func:`take_rows`) and writes them with the job's receipt and success
(``step_rows_and_settlement``: one statement on PostgreSQL)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db.database import pre_commit
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
from flowledger.states import TokenState

_NAME = "engine_writes"


@dataclass
class _Job:
    spec: JobSpec
    now: datetime
    trace_row: dict[str, Any]  # its job_enqueued row: job_id is set when written
    # its id, when the step reserved one (engine/store/reserved_ids.py): the
    # trace row names the job by it before the insert
    reserved_id: int | None = None


@dataclass
class WriteBuffer:
    conn: AsyncConnection
    store: EngineStore
    # the rows but the jobs: token moves (and the moved tokens that also park
    # there, a join not yet firing), outbox, form writes, trace, and the
    # rows made with reserved ids — tasks and forks, which go with the other
    # rows unless a read's call site writes them first (write_held,
    # flush_for_read)
    rows: StepRows = field(default_factory=StepRows)
    jobs: list[_Job] = field(default_factory=list)

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
            self._fold_moves()
            forks, rows.forks = rows.forks, ForkRows()
            await self.store.forks_write(self.conn, forks)

    def _fold_moves(self) -> None:
        """A held fork's token that moved (and parked) since: inserted where
        it is now, instead of moved in the statement that inserts it (which
        would not see the new row)."""
        rows = self.rows
        for row in rows.forks.tokens:
            node = rows.moves.pop(row["id"], None)
            if node is not None:
                row["node_key"] = node
            if row["id"] in rows.parks:
                rows.parks.discard(row["id"])
                row["state"] = TokenState.PARKED.value

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
        """Insert the buffered jobs (one call per clock reading, and apart
        the jobs with reserved ids) and fill in the job ids of the trace rows
        of the others."""
        while self.jobs:
            first = self.jobs[0]
            key = (first.now, first.reserved_id is None)
            same = [job for job in self.jobs if (job.now, job.reserved_id is None) == key]
            self.jobs = [job for job in self.jobs if (job.now, job.reserved_id is None) != key]
            await self._insert_jobs(same)

    async def _insert_jobs(self, jobs: list[_Job]) -> None:
        """Insert ``jobs`` (one clock reading; all with reserved ids or none);
        the others' trace rows take the ids."""
        reserved = [job.reserved_id for job in jobs]
        ids = None if reserved[0] is None else [int(i) for i in reserved if i is not None]
        results = await self.store.ledger.jobs_insert(
            self.conn, [job.spec for job in jobs], now=jobs[0].now, ids=ids
        )
        for job, result in zip(jobs, results, strict=True):
            if job.reserved_id is not None and result.job_id != job.reserved_id:
                raise RuntimeError(f"job {job.reserved_id} was inserted as {result.job_id}")
            job.trace_row["job_id"] = result.job_id

    async def take_rows(self) -> StepRows:
        """After writing the buffered jobs (their trace rows need the jobs'
        ids): the rest, no longer buffered — the caller writes them."""
        await self.flush_jobs()
        return self._take_rows()

    def _reserved_ids(self) -> list[int] | None:
        """The ids of the buffered jobs when they are all of one clock
        reading and the step reserved every one (their ``job_enqueued``
        trace rows name them already; a job with an idempotencyKey is never
        given one: the key may name an existing job); else None."""
        jobs = self.jobs
        if not jobs or len({job.now for job in jobs}) > 1:
            return None
        ids = [job.reserved_id for job in jobs]
        return None if None in ids else [int(i) for i in ids if i is not None]

    def _take_rows(self) -> StepRows:
        """The buffered rows but the jobs (a held fork's moved tokens folded
        in), forgotten here: the caller writes them."""
        self._fold_moves()
        rows, self.rows = self.rows, StepRows()
        return rows

    async def flush(self) -> None:
        ids = self._reserved_ids()
        if ids is not None:  # the jobs and the rest together
            jobs, self.jobs = self.jobs, []
            specs = [job.spec for job in jobs]
            await self.store.jobs_and_step_rows_write(
                self.conn, specs, ids, self._take_rows(), now=jobs[0].now
            )
            return
        await self.flush_jobs()
        await self.store.step_rows_write(self.conn, self._take_rows())


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
    buffer.jobs.append(_Job(spec, now, trace_row, trace_row.get("job_id")))
    buffer.rows.trace.append(trace_row)


async def take_rows(conn: AsyncConnection) -> StepRows:
    """The buffered rows of the transaction on ``conn`` but its jobs (which
    are written first), handed over: the caller writes them (a job step's
    settlement, ``engine.step.JobStepSettlement``). Empty without a buffer."""
    buffer = buffer_of(conn)
    return StepRows() if buffer is None else await buffer.take_rows()


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
