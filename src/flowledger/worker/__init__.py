"""The worker role: pools with execution slots, polling and wake hints, lease
renewal, abort signals, graceful shutdown, the node registry and the
cluster-wide ``workflow-jobs-drain`` task.

The public Python API of embedding a worker (``docs/embedding.md``):

- :class:`Worker` and :class:`WorkerConfig` (its pools — built-in and user
  pools with their slots — and timings);
- :func:`job_handler`, :func:`define_handler`, :class:`HandlerRegistry`,
  :class:`JobContext`, :class:`Skip` to bind job types to handler code;
- :class:`JobType`, :class:`JobTypeRegistry`, :func:`parse_pools` for job
  types and pools;
- :class:`JobSpec`, :func:`enqueue`, :func:`enqueue_bulk` to enqueue jobs in
  the caller's transaction.

Most embedders build a :class:`~flowledger.runtime.Runtime`
(:func:`flowledger.runtime.build_runtime`) and take the worker from it.
"""

from flowledger.ledger.enqueue import EnqueueResult, JobSpec, enqueue, enqueue_bulk
from flowledger.ledger.types import JobType, JobTypeRegistry, parse_pools
from flowledger.worker.context import JobContext, Skip
from flowledger.worker.registry import Handler, HandlerRegistry, define_handler, job_handler
from flowledger.worker.worker import Worker, WorkerConfig

__all__ = [
    "EnqueueResult",
    "Handler",
    "HandlerRegistry",
    "JobContext",
    "JobSpec",
    "JobType",
    "JobTypeRegistry",
    "Skip",
    "Worker",
    "WorkerConfig",
    "define_handler",
    "enqueue",
    "enqueue_bulk",
    "job_handler",
    "parse_pools",
]
