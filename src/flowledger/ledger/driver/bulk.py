"""The bookkeeping of a bulk insert (SPEC L-1, L-12, L-15; issue 15 item 5)
shared by every driver: which input rows one ``INSERT … ON CONFLICT
(idempotency_key) DO NOTHING`` inserted, and the answer per input row — the
same one the single :meth:`job_insert` gives.

A row the statement inserted is ``created``; a row it skipped has an
idempotencyKey that already names a job — in the table, inserted by a
concurrent transaction that committed first, or by an earlier row of the same
batch — and gets that job's id with ``created=False``. The ids of skipped
rows are read by key after the insert (one look-up per
:data:`KEY_LOOKUP_CHUNK` keys, only when a row was skipped).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db.schema import workflow_jobs as jobs
from flowledger.errors import ConflictError
from flowledger.ledger.models import EnqueueResult

KEY_LOOKUP_CHUNK = 500  # keys per look-up: well under SQLite's bound-variable limit


def inserted_by_key(
    rows: Sequence[dict[str, Any]], returned: Iterable[tuple[Any, str | None]]
) -> dict[int, int]:
    """Input position → id of each row an insert returned ``(id, idempotency_key)``
    for. Keyed rows are matched by key (the first row of each key); rows
    without a key by id order, which is their insertion order (the statement
    inserts them in input order, each id drawn as its row is inserted)."""
    unkeyed: list[int] = []
    by_key: dict[str, int] = {}
    for job_id, key in returned:
        if key is None:
            unkeyed.append(int(job_id))
        else:
            by_key[key] = int(job_id)
    unkeyed.sort()
    positions = [p for p, row in enumerate(rows) if row["idempotency_key"] is None]
    inserted = dict(zip(positions, unkeyed, strict=True))
    for position, row in enumerate(rows):
        key = row["idempotency_key"]
        if key is not None and key in by_key:
            inserted[position] = by_key.pop(key)  # later rows of the key were skipped
    return inserted


async def ids_for_keys(conn: AsyncConnection, keys: Iterable[str]) -> dict[str, int]:
    """The id of the job each idempotencyKey names."""
    ordered = sorted(set(keys))
    found: dict[str, int] = {}
    for start in range(0, len(ordered), KEY_LOOKUP_CHUNK):
        chunk = ordered[start : start + KEY_LOOKUP_CHUNK]
        result = await conn.execute(
            select(jobs.c.idempotency_key, jobs.c.id).where(jobs.c.idempotency_key.in_(chunk))
        )
        found.update({key: int(job_id) for key, job_id in result})
    return found


async def results(
    conn: AsyncConnection, rows: Sequence[dict[str, Any]], inserted: dict[int, int]
) -> list[EnqueueResult]:
    """One :class:`EnqueueResult` per input row, in input order."""
    skipped = [rows[p]["idempotency_key"] for p in range(len(rows)) if p not in inserted]
    existing = await ids_for_keys(conn, skipped) if skipped else {}
    answer = []
    for position, row in enumerate(rows):
        if position in inserted:
            answer.append(EnqueueResult(inserted[position], created=True))
            continue
        key = row["idempotency_key"]
        if key not in existing:  # purged between the insert and the look-up
            raise ConflictError(
                "the job of this idempotencyKey vanished while enqueueing",
                field="idempotencyKey",
                idempotency_key=key,
            )
        answer.append(EnqueueResult(existing[key], created=False))
    return answer
