"""The engine's plain values that its hooks see (SPEC E-4, C-1): a
:class:`Token` (one execution path at one node) and a :class:`NodeFailure`
(why a node failed). They sit below :mod:`~flowledger.engine.step` and know
nothing of a step, so that :mod:`~flowledger.engine.hooks` can name them
without importing anything that imports the hooks back (issue 28 item 7).
:mod:`~flowledger.engine.tokens` and :mod:`~flowledger.engine.node_failures`
re-export them where their importers have always found them."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Token:
    """A token: its id, the node it is at and its fork stack (the frame ids
    of the forks it is a branch of, innermost last)."""

    id: int
    node_key: str
    fork_stack: list[int]


@dataclass(frozen=True)
class NodeFailure:
    """Why a node failed: a machine ``code``, a human ``message``, the job
    whose attempt failed (if a job did), and whether the failure came after
    the job's attempt budget was used up (``retries_exhausted``) rather than
    from a permanent error or a callback."""

    code: str
    message: str
    job_id: int | None
    retries_exhausted: bool
