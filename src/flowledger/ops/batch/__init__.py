"""One batch-operation mechanism (issue 29 item 4; SPEC O-6, O-18, L-24):
every operator batch — batch recovery of instances, suspend/resume by
definition, targeted recovery, job batch retry/skip and replay — selects,
dry-runs, runs and reports through the same pieces:

- :mod:`~flowledger.ops.batch.outcome` — the one per-item vocabulary
  ``done | skipped(reason) | failed(error)`` and the counts over it;
- :mod:`~flowledger.ops.batch.selection` — what a batch would act on, and
  its dry run (a count and a sample);
- :mod:`~flowledger.ops.batch.runner` — runs an action per item at a rate,
  each item in its own transaction (the action owns it), one failing item
  never stopping the others;
- :mod:`~flowledger.ops.batch.pacing` — the rate's bounds (1 to 200 per
  second), a batch's estimated completion at its rate, and the bound on a
  paced run held inside a request (:class:`RateTooSlow`);
- :mod:`~flowledger.ops.batch.record` — the recorded batch operation
  (``workflow_batch_operations``): started with an id, then described by id
  with its progress and counts, as Temporal's BatchOperation.

Never imports the API or the CLI.
"""

from flowledger.ops.batch.outcome import (
    DONE,
    FAILED,
    SKIPPED,
    Counts,
    ItemOutcome,
    done,
    failed,
    failed_from,
    skipped,
)
from flowledger.ops.batch.pacing import MAX_RATE, MIN_RATE, RateTooSlow, check_paced
from flowledger.ops.batch.record import BatchOperation, BatchRecorder, describe, list_batches
from flowledger.ops.batch.runner import run_items
from flowledger.ops.batch.selection import Selection

__all__ = [
    "DONE",
    "FAILED",
    "MAX_RATE",
    "MIN_RATE",
    "SKIPPED",
    "BatchOperation",
    "BatchRecorder",
    "Counts",
    "ItemOutcome",
    "RateTooSlow",
    "Selection",
    "check_paced",
    "describe",
    "done",
    "failed",
    "failed_from",
    "list_batches",
    "run_items",
    "skipped",
]
