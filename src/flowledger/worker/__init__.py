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
- :class:`JobSpec` and :class:`EnqueueResult`; jobs are enqueued through
  the runtime (``Runtime.enqueue``, ``Runtime.enqueue_in(conn, …)`` in the
  caller's transaction). :func:`enqueue` and :func:`enqueue_bulk` are
  deprecated (:mod:`flowledger.worker.deprecated`, one release).

Most embedders build a :class:`~flowledger.runtime.Runtime`
(:func:`flowledger.runtime.build_runtime`) and take the worker from it.
"""

from flowledger.ledger.models import EnqueueResult, JobSpec
from flowledger.ledger.types import JobType, JobTypeRegistry, parse_pools
from flowledger.worker.context import JobContext, Skip
from flowledger.worker.deprecated import enqueue, enqueue_bulk
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
