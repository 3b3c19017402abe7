"""The worker role: pools with execution slots, polling and wake hints, lease
renewal, abort signals, graceful shutdown, the node registry and the
cluster-wide ``workflow-jobs-drain`` task. Public API for users adding job
types: :func:`job_handler`, :func:`define_handler`, :class:`HandlerRegistry`,
:class:`JobContext`, :class:`Skip`."""

from flowledger.worker.context import JobContext, Skip
from flowledger.worker.registry import HandlerRegistry, define_handler, job_handler

__all__ = ["HandlerRegistry", "JobContext", "Skip", "define_handler", "job_handler"]
