"""The step plan (issue 28 item 1): what an engine step writes at its end,
as a plain value the engine's node logic fills and the engine store writes.

A :class:`StepPlan` holds the step's rows but its jobs
(:class:`~flowledger.engine.store.writes.StepRows`: token moves and parks,
outbox events, form writes, trace rows, tasks and forks made with reserved
ids) and its jobs (:class:`PlannedJob`: the spec, the clock reading, the
``job_enqueued`` trace row that names it, the id the step reserved for it);
a job step's plan is written with its job's settlement
(:class:`PlannedSettlement`). The node logic adds to the plan
(:mod:`~flowledger.engine.write_buffer` holds it for the transaction) and
never writes it; :meth:`EngineStore.step_commit
<flowledger.engine.store.protocol.EngineStore.step_commit>` writes it, in
one of three fixed shapes (:func:`commit_shape`):

- ``settle``: a job step's plan — the jobs, then the rows with the job's
  receipt and settlement (PostgreSQL: one statement,
  ``step_statements.rows_then_settlement_sql``);
- ``jobs_and_rows``: every job has a reserved id and one clock reading —
  the jobs and the rows together (PostgreSQL: one statement,
  ``step_statements.jobs_then_rows_sql``);
- ``jobs_then_rows``: the jobs (one insert per clock reading; the trace
  rows take the ids the insert drew), then the rows.

What a step sends before its end is not in the plan: its first statement
(the instance lock; in a job's step with the guarded task finish and the
job's fenced lock, ``store.job_lock``), and the writes a read in the step
must see first, sent explicitly at the read's call site (``flush_for_read``,
``write_held``, ``flush_jobs`` in the write buffer) or that need an answer
(a fork without reserved ids, a join firing, the instance's end)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from flowledger.engine.store.writes import StepRows
from flowledger.ledger.models import Fence, JobSpec, Outcome
from flowledger.states import TokenState


@dataclass
class PlannedJob:
    """One job a step enqueues, with the ``job_enqueued`` trace row that
    names it (its ``job_id`` filled in when the job is inserted, or from the
    start when the step reserved the id)."""

    spec: JobSpec
    now: datetime
    trace_row: dict[str, Any]
    reserved_id: int | None = None


@dataclass(frozen=True)
class PlannedSettlement:
    """A job step's end: its receipt and its job's plain success (or skip)."""

    fence: Fence
    operation_key: str
    step_key: str
    receipt: Any
    outcome: Outcome
    now: datetime
    started_at: datetime | None


CommitShape = Literal["settle", "jobs_and_rows", "jobs_then_rows"]


@dataclass
class StepPlan:
    """What a step (or the steps of one transaction) writes at its end."""

    rows: StepRows = field(default_factory=StepRows)
    jobs: list[PlannedJob] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.rows or self.jobs)

    def reserved_job_ids(self) -> list[int] | None:
        """The ids of the plan's jobs when they are all of one clock reading
        and the step reserved every one (their ``job_enqueued`` trace rows
        name them already; a job with an idempotencyKey is never given one:
        the key may name an existing job); else None."""
        jobs = self.jobs
        if not jobs or len({job.now for job in jobs}) > 1:
            return None
        ids = [job.reserved_id for job in jobs]
        return None if None in ids else [int(i) for i in ids if i is not None]

    def take_job_batches(self) -> list[list[PlannedJob]]:
        """The plan's jobs, taken out, in insert batches: one per clock
        reading, apart the jobs with reserved ids, in the order of each
        batch's first job."""
        batches: list[list[PlannedJob]] = []
        jobs, self.jobs = self.jobs, []
        while jobs:
            key = (jobs[0].now, jobs[0].reserved_id is None)
            batches.append([job for job in jobs if (job.now, job.reserved_id is None) == key])
            jobs = [job for job in jobs if (job.now, job.reserved_id is None) != key]
        return batches

    def fold_moves(self) -> None:
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


def commit_shape(plan: StepPlan, settlement: PlannedSettlement | None) -> CommitShape:
    """Which of the fixed shapes writes ``plan`` (see the module's docstring)."""
    if settlement is not None:
        return "settle"
    if plan.reserved_job_ids() is not None:
        return "jobs_and_rows"
    return "jobs_then_rows"
