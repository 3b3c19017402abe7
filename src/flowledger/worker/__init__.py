"""The worker role: pools with execution slots, polling and wake hints, lease
renewal, abort signals, graceful shutdown, the node registry and the
cluster-wide ``workflow-jobs-drain`` task. Public API for users adding job
types: :func:`job_handler`, :func:`register_handler`, :class:`JobContext`,
:class:`Skip`."""

from flowledger.worker.context import JobContext, Skip
from flowledger.worker.registry import job_handler, register_handler

__all__ = ["JobContext", "Skip", "job_handler", "register_handler"]
