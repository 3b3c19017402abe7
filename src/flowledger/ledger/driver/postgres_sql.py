"""The PostgreSQL statements of the ledger driver's claim and success
settlement (SPEC L-7, L-9): each one data-modifying CTE, atomic on its own,
so it runs in autocommit in one round trip. :class:`PostgresLedger
<flowledger.ledger.driver.postgres.PostgresLedger>` sends them over a pooled
connection, :class:`PostgresFastLedger
<flowledger.ledger.driver.postgres.PostgresFastLedger>` over a dedicated
:class:`~flowledger.db.pg_hotpath.PgHotPath` with prepared statements: one
text per statement, two transports.

Claim: ``WITH locked AS (SELECT … FOR UPDATE SKIP LOCKED LIMIT n), claimed AS
(UPDATE … RETURNING …), attempts AS (INSERT INTO workflow_job_executions …),
next_due AS (earliest run_at … pending, not locked here) SELECT …`` — the
claim, its lease and its attempt rows commit together and concurrent
claimers skip each other's rows; jobs of a paused pool or type are not
candidates (:mod:`.pause_filter`). Every row also carries the earliest
``run_at`` of the pool's pending jobs this claim did not take (one row of
NULL job columns when it took none), so the pool knows when to claim next
without another round trip (issue 15 item 2); all CTEs read the statement's
one snapshot, in which the locked rows are still pending, hence ``NOT IN``.
When the claim took fewer jobs than it asked for, every due pending job it
could lock is among them, so the earliest is read among the jobs not yet
due (``run_at > now``): that index range starts past the entries of the
jobs already run, which stay in the partial indexes as dead entries until a
vacuum and which the full scan stepped over on every idle claim (issue 15:
after a 20,000-job drain, ~0.7 ms of a woken pool's latency). A due job
another claimer holds locked at that moment is then not reported; that
claimer is taking it.
Ordered by ``priority, run_at, id`` or, for the every-fourth "earliest due"
claim, by ``run_at, id``; both served by partial indexes on pending rows.

The claim commits without waiting for its WAL flush (``commit_mode``:
``set_config('synchronous_commit', 'off', true)``, local to the statement's
own transaction; the setting in force at commit decides), which was most of
a woken pool's latency (issue 15: an fsync of 1-4 ms on the bench host
before the handler could start). It is visible at once like any commit;
what a server crash in the next few hundred milliseconds can lose is only a
claim nothing durable depends on yet — every later write of that attempt
(side-effect marker, step receipt, settlement, lease renewal) commits
synchronously, and flushing it flushes the earlier claim with it. A claim so
lost leaves the job pending as before it, to be claimed and run again, as
the ledger's at-least-once execution allows (L-5, L-10, L-17). Enqueues and
settlements keep synchronous commits.

Settlement: the jobs still fenced (id, generation, lease token, running)
are locked in id order — the one order of every multi-row writer of
``workflow_jobs``, so a settlement and a lease renewal over the same jobs
cannot deadlock — then become succeeded, and only their running attempt rows
are finished, each named by its id *and* its start (on PostgreSQL
``workflow_job_executions`` is partitioned by ``started_at`` and its primary
key is ``(id, started_at)``: the start prunes the update to the attempt's one
partition, so it costs the same with one day of history or ninety; issue 34
item 1). A step that settles its own attempt (SPEC L-14: the step's
receipt and the attempt's success commit with its work) sends one statement
for both: the fenced single-row settlement and, only when it settled, the
receipt's insert (``SETTLE_ONE_WITH_RECEIPT_SQL``).

The settlements find their jobs by primary key only (issue 32): their
status test is the fence's ``IS NOT DISTINCT FROM`` (``STILL_RUNNING_SQL``
of :mod:`~flowledger.ledger.driver.fence`), which no index serves, and the
batch's lock and update both search ``id = ANY`` the batch's ids. Written
``status = 'running'``, it let the planner, counting a handful of running
jobs, bitmap-scan all of ``ix_workflow_jobs_running_lease``, whose settled
jobs' entries stay until VACUUM. The batch's update then needs no fence of its own:
the lock, taken in the same statement and held to its end, was granted
only on rows that met the fence (PostgreSQL checks a row updated meanwhile
again at its newest version before locking it), and nothing else can
change a locked row.

Bulk insert (issue 15 item 5): one ``INSERT … SELECT … FROM unnest(typed
arrays) WITH ORDINALITY … ON CONFLICT (idempotency_key) DO NOTHING`` per
batch, whose text depends only on the columns, never on the row count, so
psycopg prepares it once. Ids are drawn in input order (first-in, first-out
among equal ``run_at``) and the rows are then inserted in idempotencyKey
order, so two concurrent batches with overlapping keys wait for each other in
one order and cannot deadlock; the statement answers (ordinality, id) for
each row it inserted. Up to ``JSON_INSERT_MAX_ROWS`` rows (an engine step's
one or two jobs) the same insert reads its rows from one JSON document
(``json_to_recordset``) instead of one array per column.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime, timedelta
from functools import cache
from typing import Any

from psycopg.types.json import Jsonb
from sqlalchemy import String
from sqlalchemy.dialects import postgresql
from sqlalchemy.engine import Dialect

from flowledger.db.schema import workflow_jobs
from flowledger.db.types import UTCDateTime
from flowledger.db.wake import WAKE_CHANNEL
from flowledger.ledger.driver.fence import STILL_RUNNING_SQL
from flowledger.ledger.driver.pause_filter import UNPAUSED_SQL

RETURNED = (
    "id, type, pool, payload, generation, attempts, max_attempts, lease_token, lease_until, "
    "execution_deadline, run_at, operation_key, trace_id, tenant_id, instance_id, task_id, "
    "node_key, priority"
)

_CLAIM = """
WITH locked AS (
    SELECT id FROM workflow_jobs
    WHERE pool = %(pool)s AND status = 'pending' AND run_at <= %(now)s AND {unpaused}
    ORDER BY {order}
    LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
), claimed AS (
    UPDATE workflow_jobs AS j SET
        status = 'running',
        attempts = j.attempts + 1,
        lease_token = gen_random_uuid()::text,
        lease_owner = %(node)s,
        execution_deadline = %(now)s + j.execution_timeout_ms * interval '1 millisecond',
        lease_until = LEAST(%(lease_until)s,
                            %(now)s + j.execution_timeout_ms * interval '1 millisecond'),
        side_effect_at = NULL,
        updated_at = %(now)s
    FROM locked WHERE j.id = locked.id
    RETURNING j.{returned}
), attempts AS (
    INSERT INTO workflow_job_executions
        (job_id, generation, attempt, status, node_id, scheduled_at, started_at)
    SELECT id, generation, attempts, 'running', %(node)s, run_at, %(now)s FROM claimed
    RETURNING id AS execution_id, job_id
), next_due AS (
    SELECT CASE WHEN (SELECT count(*) FROM locked) >= %(limit)s
        THEN (SELECT run_at FROM workflow_jobs
              WHERE pool = %(pool)s AND status = 'pending' AND id NOT IN (SELECT id FROM locked)
                AND {unpaused}
              ORDER BY run_at LIMIT 1)
        ELSE (SELECT run_at FROM workflow_jobs
              WHERE pool = %(pool)s AND status = 'pending' AND run_at > %(now)s
                AND {unpaused}
              ORDER BY run_at LIMIT 1)
    END AS next_due
), commit_mode AS (
    SELECT set_config('synchronous_commit', 'off', true) AS synchronous_commit
)
SELECT claimed.*, attempts.execution_id, next_due.next_due
FROM next_due CROSS JOIN commit_mode
    LEFT JOIN (claimed JOIN attempts ON attempts.job_id = claimed.id) ON true
ORDER BY {outer_order}
"""

_ORDERS = {
    "priority": ("priority, run_at, id", "claimed.priority, claimed.run_at, claimed.id"),
    "due": ("run_at, id", "claimed.run_at, claimed.id"),
}

CLAIM_SQL = {
    order: _CLAIM.format(
        order=inner,
        outer_order=outer,
        returned=RETURNED.replace(", ", ", j."),
        unpaused=UNPAUSED_SQL,
    )
    for order, (inner, outer) in _ORDERS.items()
}


def _succeeded(result: str) -> str:
    """The SET list of a job's success settlement, its result ``result``."""
    return (
        f"status = 'succeeded', result = {result}, last_error = NULL, "
        "last_error_code = NULL, last_error_fingerprint = NULL, "
        "lease_token = NULL, lease_until = NULL, lease_owner = NULL, updated_at = %(now)s"
    )


def _attempt_finished(skipped: str, duration: str) -> str:
    """The SET list of a succeeded (or skipped) attempt row."""
    return (
        f"status = CASE WHEN {skipped} THEN 'skipped' ELSE 'succeeded' END, "
        f"finished_at = %(now)s, duration_ms = {duration}"
    )


SETTLE_SUCCESS_SQL = f"""
WITH input AS (
    SELECT t.* FROM jsonb_to_recordset(%(rows)s::jsonb)
        AS t(id bigint, gen int, token text, exec_id bigint, duration int, skipped bool,
             result jsonb, exec_start timestamptz)
), locked AS (
    SELECT j.id FROM workflow_jobs AS j JOIN input ON j.id = input.id
    WHERE j.id = ANY (ARRAY(SELECT id FROM input))
      AND j.generation = input.gen AND j.lease_token = input.token
      AND {STILL_RUNNING_SQL}
    ORDER BY j.id
    FOR UPDATE OF j
), settled AS (
    UPDATE workflow_jobs AS j SET {_succeeded("input.result")}
    FROM input
    WHERE j.id = ANY (ARRAY(SELECT id FROM locked)) AND j.id = input.id
    RETURNING j.id
), attempts AS (
    UPDATE workflow_job_executions AS e SET {_attempt_finished("input.skipped", "input.duration")}
    FROM input JOIN settled ON settled.id = input.id
    WHERE e.id = input.exec_id AND e.started_at = input.exec_start AND e.status = 'running'
      AND e.started_at BETWEEN %(first_start)s AND %(last_start)s
    RETURNING e.id
)
SELECT id FROM settled
"""


def claim_params(
    *, pool: str, limit: int, node_id: str, now: datetime, lease_ms: int
) -> dict[str, Any]:
    return {
        "pool": pool,
        "now": now,
        "limit": limit,
        "node": node_id,
        "lease_until": now + timedelta(milliseconds=lease_ms),
    }


def settle_success_params(
    *,
    ids: list[int],
    gens: list[int],
    tokens: list[str],
    exec_ids: list[int],
    durations: list[int | None],
    skipped: list[bool],
    results: list[Any],
    exec_starts: list[datetime],
    now: datetime,
) -> dict[str, Any]:
    """The parameters of :data:`SETTLE_SUCCESS_SQL`, one list entry per job:
    the rows travel as one JSON document (``rows``), which the statement
    reads with ``jsonb_to_recordset``. One text parameter is dumped by the
    driver's C code; eight typed arrays were dumped element by element in
    Python, ~0.4 ms of the worker's CPU per settlement of 16 jobs (issue 32).
    A result of ``None`` is JSON null, which the record reads as SQL NULL,
    as the array's NULL element was; a start keeps its microseconds in
    ISO 8601 (the attempt is found by its start, its partition key)."""
    rows = [
        {
            "id": job_id,
            "gen": gen,
            "token": token,
            "exec_id": exec_id,
            "duration": duration,
            "skipped": skip,
            "result": result,
            "exec_start": start.isoformat(),
        }
        for job_id, gen, token, exec_id, duration, skip, result, start in zip(
            ids, gens, tokens, exec_ids, durations, skipped, results, exec_starts, strict=True
        )
    ]
    return {
        "rows": json.dumps(rows),
        # scalar bounds of the batch's starts: the planner prunes the
        # partitioned attempts to the days they span (the per-row start comes
        # from the array join, which only prunes at run time, after every
        # partition was planned)
        "first_start": min(exec_starts),
        "last_start": max(exec_starts),
        "now": now,
    }


# One job's step receipt and its plain success, in the step's own
# transaction (which holds the job row's lock since its fenced check): the
# batch statement's settlement over scalar parameters (no arrays to dump),
# and the receipt inserted only when the fenced update settled the row.
SETTLE_ONE_WITH_RECEIPT_CTES = f"""settled AS (
    UPDATE workflow_jobs AS j SET {_succeeded("%(result)s")}
    WHERE j.id = %(id)s AND j.generation = %(gen)s AND j.lease_token = %(token)s
      AND {STILL_RUNNING_SQL}
    RETURNING j.id
), attempt AS (
    UPDATE workflow_job_executions AS e SET {_attempt_finished("%(skipped)s", "%(duration)s::int")}
    FROM settled
    WHERE e.id = %(exec_id)s AND e.started_at = %(exec_start)s AND e.status = 'running'
    RETURNING e.id
), receipt AS (
    INSERT INTO workflow_job_effects
        (operation_key, step_key, job_id, generation, result, created_at)
    SELECT %(operation_key)s, %(step_key)s, settled.id, %(gen)s, %(receipt)s, %(now)s
    FROM settled
    RETURNING id
)"""
# its answer: the settled job's id (no row: the fence no longer held)
SETTLE_ONE_WITH_RECEIPT_SELECT = "SELECT id FROM settled"
SETTLE_ONE_WITH_RECEIPT_SQL = (
    f"WITH {SETTLE_ONE_WITH_RECEIPT_CTES}\n{SETTLE_ONE_WITH_RECEIPT_SELECT}\n"
)


def settle_one_with_receipt_params(
    *,
    job_id: int,
    gen: int,
    token: str,
    exec_id: int,
    exec_start: datetime,
    duration: int | None,
    skipped: bool,
    result: Any,
    operation_key: str,
    step_key: str,
    receipt: Any,
    now: datetime,
) -> dict[str, Any]:
    """The parameters of :data:`SETTLE_ONE_WITH_RECEIPT_SQL`."""
    return {
        "id": job_id,
        "gen": gen,
        "token": token,
        "exec_id": exec_id,
        "exec_start": exec_start,
        "duration": duration,
        "skipped": skipped,
        "result": None if result is None else Jsonb(result),
        "operation_key": operation_key,
        "step_key": step_key,
        "receipt": Jsonb(receipt),
        "now": now,
    }


_PG: Dialect = postgresql.dialect()  # type: ignore[no-untyped-call]  # compiles type names only
JOBS_ID_SEQUENCE = "workflow_jobs_id_seq"  # the sequence of the BIGSERIAL ``workflow_jobs.id``


@cache
def _element_type(column: str) -> str:
    """The type of ``column``'s parameter (of its array's elements): its own type, but
    strings unbounded — an explicit cast to ``varchar(n)`` would truncate a
    value the column refuses as too long."""
    column_type = workflow_jobs.c[column].type
    if isinstance(column_type, String):
        return "text"
    return str(_PG.type_compiler_instance.process(column_type.dialect_impl(_PG)))


def _insert_ctes(input_sql: str, names: str, shared: tuple[str, ...]) -> str:
    """The bulk insert's CTEs over ``input_sql`` (the rows, ``id`` drawn in
    input order or given, ``ord`` their 1-based position): the insert and
    the wake hint of every pool that got a row."""
    scalars = "".join(f", %({name})s::{_element_type(name)}" for name in shared)
    return f"""input AS ({input_sql}
), inserted AS (
    INSERT INTO workflow_jobs (id, {names}{"".join(", " + name for name in shared)})
    SELECT id, {names}{scalars} FROM input
    ORDER BY idempotency_key NULLS FIRST, ord
    ON CONFLICT (idempotency_key) DO NOTHING
    RETURNING id, pool
), woken AS (
    SELECT count(pg_notify(%(wake_channel)s, pool)) AS pools
    FROM (SELECT DISTINCT pool FROM inserted) AS p
)"""


# the bulk insert's answer: (ordinality, id) of each row it inserted
INSERTED_SELECT = """SELECT input.ord, inserted.id, (SELECT pools FROM woken) AS woken
FROM inserted JOIN input USING (id)"""


def _insert_from(input_sql: str, names: str, shared: tuple[str, ...]) -> str:
    """The bulk insert over ``input_sql`` as one statement."""
    return f"WITH {_insert_ctes(input_sql, names, shared)}\n{INSERTED_SELECT}\n"


@cache
def insert_jobs_sql(columns: tuple[str, ...], shared: tuple[str, ...]) -> str:
    """The bulk insert of ``workflow_jobs`` rows: one array parameter per
    column of ``columns`` (which must include ``idempotency_key`` and
    ``pool``) and one scalar per column of ``shared`` (the same value for
    every row), each named after its column and cast to the column's type.
    The same statement publishes the wake hint (SPEC L-8) of every pool that
    got a row, ``pg_notify(%(wake_channel)s, pool)``, delivered on commit
    (the round trip a separate ``SELECT pg_notify`` cost per enqueue; issue
    15 item 2): a scalar subquery of the output rows, so it runs once, and
    only when a row was inserted."""
    arrays = ", ".join(f"%({name})s::{_element_type(name)}[]" for name in columns)
    names = ", ".join(columns)
    return _insert_from(
        f"""
    SELECT nextval('{JOBS_ID_SEQUENCE}') AS id, t.*
    FROM unnest({arrays}) WITH ORDINALITY AS t({names}, ord)
    ORDER BY ord""",
        names,
        shared,
    )


# Up to this many rows, an insert sends its rows as one JSON document
# (``insert_jobs_json_sql``): one parameter json.dumps encodes in C, where
# every ``unnest`` array is dumped element by element in Python — for the
# engine's one or two jobs per step the arrays cost more than the rest of
# the statement. Larger batches keep the arrays.
JSON_INSERT_MAX_ROWS = 64


@cache
def insert_jobs_json_ctes(
    columns: tuple[str, ...], shared: tuple[str, ...], *, given_ids: bool = False
) -> str:
    """The CTEs of :func:`insert_jobs_json_sql`, whose answer is
    :data:`INSERTED_SELECT` (for a store that writes its own rows in the
    same statement: :mod:`~flowledger.ledger.driver.postgres_parts`)."""
    names = ", ".join(columns)
    defs = ", ".join(f"{name} {_element_type(name)}" for name in columns)
    drawn = f"nextval('{JOBS_ID_SEQUENCE}')"
    if given_ids:
        defs, names, drawn = f"id bigint, {defs}", f"id, {names}", "t.id"
    values = ", ".join(
        f"COALESCE(t.{name}, 'null'::jsonb) AS {name}"
        if _element_type(name) == "JSONB"
        else f"t.{name}"
        for name in columns
    )
    return _insert_ctes(
        f"""
    SELECT {drawn} AS id, {values}, t.ord
    FROM ROWS FROM (json_to_recordset(%(rows)s::json) AS ({defs}))
        WITH ORDINALITY AS t({names}, ord)
    ORDER BY t.ord""",
        ", ".join(columns),
        shared,
    )


@cache
def insert_jobs_json_sql(
    columns: tuple[str, ...], shared: tuple[str, ...], *, given_ids: bool = False
) -> str:
    """:func:`insert_jobs_sql` over one JSON array of row objects,
    ``%(rows)s`` (``json_to_recordset``, in order): each key a column of
    ``columns`` read as the column's type; a JSON null in a jsonb column
    stays JSON null, as the array path's bound value is. ``given_ids``:
    each row carries its ``id`` (drawn by the caller from the sequence)
    instead of drawing one here."""
    ctes = insert_jobs_json_ctes(columns, shared, given_ids=given_ids)
    return f"WITH {ctes}\n{INSERTED_SELECT}\n"


def insert_jobs_params(
    columns: tuple[str, ...],
    shared: tuple[str, ...],
    rows: Sequence[dict[str, Any]],
    dialect: Dialect,
) -> dict[str, Any]:
    """The parameters of :func:`insert_jobs_sql`, each value bound as the
    column's type binds it in a single-row insert (JSONB wrapped, timestamps
    checked aware and made UTC); a ``shared`` column's value is the first row's."""
    params: dict[str, Any] = {"wake_channel": WAKE_CHANNEL}
    for name in (*columns, *shared):
        process = workflow_jobs.c[name].type.dialect_impl(dialect).bind_processor(dialect)
        if name in shared:
            value = rows[0][name]
            params[name] = value if process is None else process(value)
            continue
        values = [row[name] for row in rows]
        params[name] = values if process is None else [process(v) for v in values]
    return params


@cache
def _timestamp_columns(columns: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(name for name in columns if _element_type(name) == "TIMESTAMP WITH TIME ZONE")


def insert_jobs_json_params(
    columns: tuple[str, ...],
    shared: tuple[str, ...],
    rows: Sequence[dict[str, Any]],
    dialect: Dialect,
) -> dict[str, Any]:
    """The parameters of :func:`insert_jobs_json_sql`: the rows as one JSON
    document (timestamps checked aware, as ISO UTC strings; jsonb values as
    JSON), the ``shared`` columns as in :func:`insert_jobs_params`."""
    params: dict[str, Any] = {"wake_channel": WAKE_CHANNEL}
    for name in shared:
        process = workflow_jobs.c[name].type.dialect_impl(dialect).bind_processor(dialect)
        params[name] = rows[0][name] if process is None else process(rows[0][name])
    stamps = _timestamp_columns(columns)
    utc = UTCDateTime()
    document = []
    for row in rows:
        item = {name: row[name] for name in columns}
        if "id" in row:  # given by the caller (insert_jobs_json_sql(given_ids=True))
            item["id"] = row["id"]
        for name in stamps:
            value = utc.process_bind_param(item[name], dialect)  # refuses a naive one
            item[name] = None if value is None else value.isoformat()
        document.append(item)
    params["rows"] = json.dumps(document)
    return params
