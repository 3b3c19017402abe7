"""The ledger driver a test writes through (issue 28 item 4). Product code
holds its driver — the runtime's, chosen once for its database
(``Runtime.ledger``, ``Engine.store.ledger``, ``JobContext.ledger``); a test
that has only a connection or a database takes the driver of its kind here,
and calls the driver's operations by their one name (``job_insert``,
``jobs_insert``, ``jobs_claim``, ``job_settle`` …)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db.database import Database
from flowledger.ledger.driver import ledger_driver, ledger_for
from flowledger.ledger.driver.protocol import LedgerDriver
from flowledger.ledger.models import JobSpec
from flowledger.ledger.types import JobTypeRegistry


def ledger_of(target: AsyncConnection | Database) -> LedgerDriver:
    """The (shared) ledger driver of ``target``'s kind of database."""
    if isinstance(target, Database):
        return ledger_driver(target)
    return ledger_for(target)


async def enqueue_many(
    conn: AsyncConnection,
    specs: Sequence[JobSpec],
    *,
    now: datetime,
    job_types: JobTypeRegistry | None = None,
) -> list[int]:
    """``jobs_insert`` answering only the job ids."""
    results = await ledger_of(conn).jobs_insert(conn, specs, now=now, job_types=job_types)
    return [result.job_id for result in results]
