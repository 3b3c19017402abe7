"""The module-level enqueue functions of ``flowledger.worker`` before issue 28
item 4, kept for one release with a :class:`DeprecationWarning`: the one
spelling now is the runtime's (``Runtime.enqueue`` in a transaction of its
own, ``Runtime.enqueue_in(conn, …)`` inside yours) or, for code that holds a
ledger driver, the driver's ``job_insert`` / ``jobs_insert``.

They pick the driver of the connection's kind of database on every call —
exactly what the runtime's chosen-once driver avoids — which is why they
go."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.ledger.driver import ledger_for
from flowledger.ledger.models import EnqueueResult, JobSpec
from flowledger.ledger.types import JobTypeRegistry

__all__ = ["enqueue", "enqueue_bulk"]


def _warn(old: str, new: str) -> None:
    warnings.warn(
        f"flowledger.worker.{old} is deprecated and goes in the next release: use {new}",
        DeprecationWarning,
        stacklevel=3,
    )


async def enqueue(
    conn: AsyncConnection,
    spec: JobSpec,
    *,
    now: datetime,
    job_types: JobTypeRegistry | None = None,
) -> EnqueueResult:
    """Deprecated: ``(await runtime.enqueue_in(conn, spec))[0]``."""
    _warn("enqueue", "Runtime.enqueue_in(conn, spec) or LedgerDriver.job_insert")
    return await ledger_for(conn).job_insert(conn, spec, now=now, job_types=job_types)


async def enqueue_bulk(
    conn: AsyncConnection,
    specs: Sequence[JobSpec],
    *,
    now: datetime,
    job_types: JobTypeRegistry | None = None,
) -> list[EnqueueResult]:
    """Deprecated: ``await runtime.enqueue_in(conn, *specs)``."""
    _warn("enqueue_bulk", "Runtime.enqueue_in(conn, *specs) or LedgerDriver.jobs_insert")
    return await ledger_for(conn).jobs_insert(conn, specs, now=now, job_types=job_types)
