"""The ledger's PostgreSQL statements as named parts that another store
composes with its own writes into one statement (issue 28 item 3): a job
step's settlement (its receipt and its plain success, fenced) and the
insert of jobs whose ids the caller drew. The store that composes them owns
the composed statement (the engine's: ``engine/store/step_statements.py``);
the ledger runs nothing of anyone else's, and its own drivers send the same
parts alone (``SETTLE_ONE_WITH_RECEIPT_SQL``, ``insert_jobs_json_sql``).

A part is CTE text (``name AS (…), …``, driver SQL with ``%(name)s``
parameters), the ``SELECT`` that answers for it, and its parameters, built
from values (:func:`settlement_params`, :func:`jobs_insert_parts`). The
parameter names a part binds are listed (:data:`SETTLEMENT_NAMES`,
:data:`INSERT_NAMES`): a composing store's own must differ."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy.engine import Dialect
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db import wake
from flowledger.ledger.driver.job_values import BATCH_COLUMNS, duration_ms, job_row
from flowledger.ledger.driver.postgres_sql import (
    INSERTED_SELECT,
    JSON_INSERT_MAX_ROWS,
    SETTLE_ONE_WITH_RECEIPT_CTES,
    SETTLE_ONE_WITH_RECEIPT_SELECT,
    insert_jobs_json_ctes,
    insert_jobs_json_params,
    settle_one_with_receipt_params,
)
from flowledger.ledger.models import EnqueueResult, Fence, Outcome, OutcomeKind

# a step's settlement: CTEs ``settled``, ``attempt``, ``receipt``; its answer
# is the settled job's id (no row: the fence no longer held)
SETTLEMENT_CTES = SETTLE_ONE_WITH_RECEIPT_CTES
SETTLEMENT_SELECT = SETTLE_ONE_WITH_RECEIPT_SELECT
SETTLEMENT_NAMES = frozenset(
    {"id", "gen", "token", "exec_id", "exec_start", "duration", "skipped", "result"}
    | {"operation_key", "step_key", "receipt", "now"}
)
# an insert of jobs: CTEs ``input``, ``inserted``, ``woken``; its answer is
# (ord, id) of each row inserted
INSERT_SELECT = INSERTED_SELECT
INSERT_NAMES = frozenset(("rows", "wake_channel", *BATCH_COLUMNS))


def settlement_params(
    fence: Fence,
    operation_key: str,
    step_key: str,
    receipt: Any,
    outcome: Outcome,
    *,
    now: datetime,
    started_at: datetime | None,
) -> dict[str, Any]:
    """The values :data:`SETTLEMENT_CTES` binds for a plain success (or
    skip) ``outcome`` of the job ``fence`` owns, with the step's receipt."""
    return settle_one_with_receipt_params(
        job_id=fence.job_id,
        gen=fence.generation,
        token=fence.lease_token,
        exec_id=fence.execution_id,
        exec_start=fence.execution_started_at,
        duration=None if started_at is None else duration_ms(started_at, now),
        skipped=outcome.kind is OutcomeKind.SKIPPED,
        result=outcome.result,
        operation_key=operation_key,
        step_key=step_key,
        receipt=receipt,
        now=now,
    )


@dataclass(frozen=True)
class JobsInsertParts:
    """The insert of jobs with given ids, as parts: ``ctes`` (fixed per
    column set), their answer ``select``, the bound ``params``, and what
    :func:`jobs_inserted` checks the answer against."""

    ctes: str
    select: str
    params: dict[str, Any]
    ids: tuple[int, ...]
    pools: tuple[str, ...]


def jobs_insert_parts(
    specs: Sequence[Any], ids: Sequence[int], *, now: datetime, dialect: Dialect
) -> JobsInsertParts:
    """The insert of ``specs`` (each a :class:`~flowledger.ledger.models.JobSpec`
    of its own :class:`~flowledger.ledger.types.JobType`, without an
    idempotencyKey) as jobs ``ids`` (drawn by the caller from the jobs'
    sequence), at most :data:`JSON_INSERT_MAX_ROWS` of them."""
    if not specs or len(specs) > JSON_INSERT_MAX_ROWS:
        raise ValueError(f"1 to {JSON_INSERT_MAX_ROWS} jobs go into one composed insert")
    if len(ids) != len(specs):
        raise ValueError(f"{len(ids)} ids given for {len(specs)} jobs")
    rows = [job_row(spec, now) for spec in specs]
    if any(row["idempotency_key"] is not None for row in rows):
        raise ValueError("a composed insert takes only jobs without idempotencyKeys")
    for row, job_id in zip(rows, ids, strict=True):
        row["id"] = job_id
    columns = tuple(n for n in rows[0] if n not in BATCH_COLUMNS and n != "id")
    return JobsInsertParts(
        ctes=insert_jobs_json_ctes(columns, BATCH_COLUMNS, given_ids=True),
        select=INSERT_SELECT,
        params=insert_jobs_json_params(columns, BATCH_COLUMNS, rows, dialect),
        ids=tuple(int(i) for i in ids),
        pools=tuple(sorted({row["pool"] for row in rows})),
    )


def jobs_inserted(
    conn: AsyncConnection, parts: JobsInsertParts, answer: Iterable[Any]
) -> list[EnqueueResult]:
    """The result per job of a composed insert, from its ``answer`` rows
    (ord, id, …): every job inserted with its given id, or RuntimeError.
    The statement notified the pools itself (``woken``): marked hinted."""
    inserted = {int(row[0]) - 1: int(row[1]) for row in answer}
    expected = dict(enumerate(parts.ids))
    if inserted != expected:
        raise RuntimeError(f"jobs {sorted(expected.values())} were inserted as {inserted}")
    for pool in parts.pools:
        wake.mark_hinted(conn, pool)
    return [EnqueueResult(job_id, created=True) for job_id in parts.ids]
