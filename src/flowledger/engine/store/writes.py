"""The statements that write an engine step's buffered rows (issue 15 item 2,
issue 28 item 5: the dialect choice stays in the engine store): token moves (with the parks
of tokens waiting at a join, E-4), outbox events (E-10), form-write history
and engine trace rows (E-8), in the order given.

PostgreSQL: one statement writes all four — data-modifying CTEs: a
single-row UPDATE per token move (by primary key, up to
:data:`MOVES_UNROLLED` moves; one text per number of moves), and for each
other table one INSERT over one JSON document of its rows
(``json_to_recordset``, in order; the columns and their types are the
table's own, :class:`~flowledger.engine.store.json_rows.JsonRows`), which
psycopg prepares once per text. A
JSON document is one C-encoded parameter per table; ``unnest`` arrays cost
a pure-Python array dump per column.
SQLite (in process): one executemany per table that has rows. On
PostgreSQL the same writes are also CTEs (:func:`pg_step_rows_ctes`) that
the store composes with the ledger's settlement or insert into one
statement (:mod:`~flowledger.engine.store.step_statements`). Rows made with ids their step
reserved come along: tasks, and forks (frame, the forking token consumed by
primary key, the branch tokens) — :class:`ForkRows`."""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import cache
from typing import Any, NamedTuple

from sqlalchemy import bindparam, text, update
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db.engine_schema import (
    workflow_event_outbox,
    workflow_forks,
    workflow_form_writes,
    workflow_tasks,
    workflow_tokens,
    workflow_trace,
)
from flowledger.engine.store.json_rows import JsonRows, utc_text
from flowledger.states import TokenState

_TRACE = workflow_trace.insert()
_OUTBOX = workflow_event_outbox.insert()
_FORM_WRITES = workflow_form_writes.insert()
_TASKS = workflow_tasks.insert()
_MOVE = (
    update(workflow_tokens)
    .where(workflow_tokens.c.id == bindparam("token_id"))
    .values(node_key=bindparam("to_node"))
)
_MOVE_AND_PARK = _MOVE.values(state=TokenState.PARKED.value)

# the rows each table gets from a step, as JSON documents: every column of
# its definition but those named (json_rows.JsonRows)
TRACE = JsonRows(workflow_trace, omit=("id",))
OUTBOX = JsonRows(workflow_event_outbox, omit=("id", "dispatched_at"))
# (a form write's reason is an operator's correction's: ops/interventions/form_corrections)
FORM_WRITES = JsonRows(workflow_form_writes, omit=("id", "reason"))
# a task or a fork inserted with the step's rows carries its id (reserved by
# the step); a fork's rows are its frame, the forking token consumed and its
# branch tokens (engine/write_buffer.py)
TASKS = JsonRows(
    workflow_tasks,
    omit=("action", "comment", "finished_by", "escalation_step", "escalated_at"),
)
FORKS = JsonRows(workflow_forks)
TOKENS = JsonRows(workflow_tokens, omit=("consumed_at",))
# at most this many forks wait in one buffer (one consume CTE each)
FORKS_HELD_MAX = 8


@dataclass
class ForkRows:
    """Forks not yet written: their frames, the tokens they consume (id, the
    node it is consumed at or None, when) and their new tokens, with ids."""

    frames: list[dict[str, Any]] = field(default_factory=list)
    consumes: list[tuple[int, str | None, datetime]] = field(default_factory=list)
    tokens: list[dict[str, Any]] = field(default_factory=list)


# Up to this many token moves are written as one single-row UPDATE each (a
# CTE per move, by primary key); more as one UPDATE joined to a JSON
# document of the moves. The join's plan is not safe to cache: psycopg
# prepares a statement on its sixth use, PostgreSQL then keeps a generic
# plan made while the tables are still small (until an ANALYZE replans:
# never, with autovacuum off), and for a document it estimates at 100 rows
# that plan is a hash join over a sequential scan of every token there is —
# one full scan per step as the table grows. On a never-analyzed table (the
# bench's, emptied; a new installation's) the planner assumes 10 pages, and
# a primary-key equality is then an index scan.
MOVES_UNROLLED = 8


def _move_ctes(count: int, param: Callable[[str], str]) -> list[str]:
    """The CTEs that write ``count`` moves, each named by ``param(name)``
    placeholders ``mv{i}_id``, ``mv{i}_node``, ``mv{i}_state`` (a move's
    state is null, or 'parked' for a token parking where it moved); past
    :data:`MOVES_UNROLLED`, one CTE over the JSON document ``moves``."""
    if count > MOVES_UNROLLED:
        return [
            "moved AS (UPDATE workflow_tokens AS t SET node_key = m.node_key, "
            "state = COALESCE(m.state, t.state) "
            f"FROM json_to_recordset(CAST({param('moves')} AS json)) "
            "AS m(id bigint, node_key text, state text) WHERE t.id = m.id)"
        ]
    return [
        f"moved_{i} AS (UPDATE workflow_tokens "
        f"SET node_key = CAST({param(f'mv{i}_node')} AS text), "
        f"state = COALESCE(CAST({param(f'mv{i}_state')} AS text), state) "
        f"WHERE id = CAST({param(f'mv{i}_id')} AS bigint))"
        for i in range(count)
    ]


def _moves_params(
    moves: dict[int, str], parks: Collection[int], prefix: str = ""
) -> dict[str, Any]:
    """The parameters of :func:`_move_ctes` for ``moves`` (names prefixed)."""
    parked = TokenState.PARKED.value
    if len(moves) > MOVES_UNROLLED:
        document = [
            {"id": t, "node_key": n, "state": parked if t in parks else None}
            for t, n in moves.items()
        ]
        return {f"{prefix}moves": json.dumps(document)}
    params: dict[str, Any] = {}
    for i, (token_id, node_key) in enumerate(moves.items()):
        params[f"{prefix}mv{i}_id"] = token_id
        params[f"{prefix}mv{i}_node"] = node_key
        params[f"{prefix}mv{i}_state"] = parked if token_id in parks else None
    return params


def _colon(name: str) -> str:
    return f":{name}"


def _fork_ctes(consumes: int, param: Callable[[str], str]) -> list[str]:
    """The CTEs that write held forks: frames, ``consumes`` forking tokens
    consumed (each by primary key), new tokens."""
    consumed = TokenState.CONSUMED.value
    return [
        f"fork_frames AS ({FORKS.insert(param('fork_frames'))})",
        *(
            f"fork_consumed_{i} AS (UPDATE workflow_tokens SET state = '{consumed}', "
            f"consumed_at = CAST({param(f'fc{i}_at')} AS timestamptz), "
            f"node_key = COALESCE(CAST({param(f'fc{i}_node')} AS text), node_key) "
            f"WHERE id = CAST({param(f'fc{i}_id')} AS bigint))"
            for i in range(consumes)
        ),
        f"fork_tokens AS ({TOKENS.insert(param('fork_tokens'))})",
    ]


def _fork_params(forks: ForkRows, prefix: str = "") -> dict[str, Any]:
    params: dict[str, Any] = {
        f"{prefix}fork_frames": FORKS.document(forks.frames),
        f"{prefix}fork_tokens": TOKENS.document(forks.tokens),
    }
    for i, (token_id, at_node, when) in enumerate(forks.consumes):
        params[f"{prefix}fc{i}_id"] = token_id
        params[f"{prefix}fc{i}_node"] = at_node
        params[f"{prefix}fc{i}_at"] = utc_text(when)
    return params


@cache  # one text per number of forks
def _pg_forks(consumes: int) -> Any:
    return text(f"WITH {', '.join(_fork_ctes(consumes, _colon))} SELECT 1")


async def pg_write_forks(conn: AsyncConnection, forks: ForkRows) -> None:
    """Write held forks now, in one statement. PostgreSQL only: rows are held
    only there (ids are reserved only there; elsewhere a fork is written by
    :func:`~flowledger.engine.store.tokens.core_replace_tokens` when it is
    made)."""
    if forks.frames:
        await conn.execute(_pg_forks(len(forks.consumes)), _fork_params(forks))


def _step_ctes(moves: int, param: Callable[[str], str], tasks: bool, forks: int = 0) -> str:
    ctes = [
        *(_fork_ctes(forks, param) if forks else []),
        *_move_ctes(moves, param),
        f"events AS ({OUTBOX.insert(param('outbox'))})",
        f"forms AS ({FORM_WRITES.insert(param('forms'))})",
    ]
    if tasks:
        ctes.append(f"tasks AS ({TASKS.insert(param('tasks'))})")
    return ", ".join(ctes)


@cache  # one text per number of moves (past MOVES_UNROLLED, one)
def _pg_moves(count: int) -> Any:
    ctes = _move_ctes(count, _colon)
    return text(f"WITH {', '.join(ctes)} SELECT 1")


@cache  # one text per number of moves, whether tasks come along, and forks
def _pg_write(moves: int, tasks: bool, forks: int) -> Any:
    return text(f"WITH {_step_ctes(moves, _colon, tasks, forks)} {TRACE.insert(':trace')}")


# the prefix of every parameter name of :func:`pg_step_rows_ctes` (the
# statement it goes into binds others)
STEP_PARAM_PREFIX = "step_"


def _step_param(name: str) -> str:
    return f"%({STEP_PARAM_PREFIX}{name})s"


@cache
def _step_rows_ctes(moves: int, tasks: bool = False, forks: int = 0) -> str:
    """The same writes as CTEs of a composed statement (driver SQL, prefixed names)."""
    trace = TRACE.insert(_step_param("trace"))
    ctes = _step_ctes(moves, _step_param, tasks, forks)
    return f"{ctes}, trace AS ({trace})"


def _moves_key(moves: dict[int, str]) -> int:
    return min(len(moves), MOVES_UNROLLED + 1)


@dataclass
class StepRows:
    """A step's rows but its jobs, not yet written: token moves (id → node)
    and the moved tokens that park there, outbox events, form writes, trace
    rows, and the rows made with reserved ids (tasks, forks)."""

    moves: dict[int, str] = field(default_factory=dict)
    parks: set[int] = field(default_factory=set)
    outbox: list[dict[str, Any]] = field(default_factory=list)
    form_writes: list[dict[str, Any]] = field(default_factory=list)
    trace: list[dict[str, Any]] = field(default_factory=list)
    tasks: list[dict[str, Any]] = field(default_factory=list)
    forks: ForkRows = field(default_factory=ForkRows)

    def __bool__(self) -> bool:
        return bool(
            self.moves
            or self.outbox
            or self.form_writes
            or self.trace
            or self.tasks
            or self.forks.frames
        )


async def core_write_moves(
    conn: AsyncConnection, moves: dict[int, str], parks: Collection[int] = ()
) -> None:
    """Move each token (id → node key), parking those in ``parks`` there: an
    executemany per kind."""
    for statement, park in ((_MOVE, False), (_MOVE_AND_PARK, True)):
        rows = [{"token_id": t, "to_node": n} for t, n in moves.items() if (t in parks) == park]
        if rows:
            await conn.execute(statement, rows)


async def pg_write_moves(
    conn: AsyncConnection, moves: dict[int, str], parks: Collection[int] = ()
) -> None:
    """:func:`core_write_moves` in one statement."""
    if moves:
        await conn.execute(_pg_moves(_moves_key(moves)), _moves_params(moves, parks))


async def core_write_step_rows(conn: AsyncConnection, rows: StepRows) -> None:
    """Write token moves (parking the tokens in ``parks`` where they moved),
    outbox rows, form writes and trace rows, each table's rows in the order
    given, a statement per table. Rows with reserved ids are held on
    PostgreSQL only (ids are reserved only there)."""
    assert not (rows.tasks or rows.forks.frames), "rows with reserved ids are PostgreSQL's"
    await core_write_moves(conn, rows.moves, rows.parks)
    for statement, some in (
        (_OUTBOX, rows.outbox),
        (_FORM_WRITES, rows.form_writes),
        (_TRACE, rows.trace),
    ):
        if some:
            await conn.execute(statement, list(some))


async def pg_write_step_rows(conn: AsyncConnection, rows: StepRows) -> None:
    """Write ``rows`` in one statement: held forks (their tokens with their
    moves folded in), token moves, outbox rows, form writes, trace rows and
    held tasks (each table's rows in the order given; ids ascend in that
    order)."""
    if not rows:
        return
    params = {
        **_moves_params(rows.moves, rows.parks),
        "outbox": OUTBOX.document(rows.outbox),
        "forms": FORM_WRITES.document(rows.form_writes),
        "trace": TRACE.document(rows.trace),
    }
    if rows.tasks:
        params["tasks"] = TASKS.document(rows.tasks)
    if rows.forks.frames:
        params.update(_fork_params(rows.forks))
    n_forks = len(rows.forks.consumes)
    await conn.execute(_pg_write(_moves_key(rows.moves), bool(rows.tasks), n_forks), params)


class StepRowsCtes(NamedTuple):
    """A step's rows as CTE text (``name AS (…), …``, driver SQL) and its
    parameters, every name prefixed :data:`STEP_PARAM_PREFIX`."""

    ctes: str
    params: dict[str, Any]


def pg_step_rows_ctes(rows: StepRows) -> StepRowsCtes | None:
    """What :func:`pg_write_step_rows` writes, as CTEs the engine store
    composes with the ledger's settlement of the job running the step or
    with the insert of the step's jobs (the trace rows name those jobs by
    the ids the step reserved): :mod:`~flowledger.engine.store.step_statements`.
    None when there is nothing to write."""
    if not rows:
        return None
    n_forks = len(rows.forks.consumes)
    ctes = _step_rows_ctes(_moves_key(rows.moves), bool(rows.tasks), n_forks)
    prefix = STEP_PARAM_PREFIX
    params = {
        **_moves_params(rows.moves, rows.parks, prefix=prefix),
        f"{prefix}outbox": OUTBOX.document(rows.outbox),
        f"{prefix}forms": FORM_WRITES.document(rows.form_writes),
        f"{prefix}trace": TRACE.document(rows.trace),
    }
    if rows.tasks:
        params[f"{prefix}tasks"] = TASKS.document(rows.tasks)
    if rows.forks.frames:
        params.update(_fork_params(rows.forks, prefix=prefix))
    return StepRowsCtes(ctes, params)


async def write_tasks(conn: AsyncConnection, rows: Sequence[dict[str, Any]]) -> None:
    """Insert task rows that carry their ids (one statement)."""
    if rows:
        await conn.execute(_TASKS, list(rows))


async def write_trace(conn: AsyncConnection, rows: Sequence[dict[str, Any]]) -> None:
    """Write trace rows at once (a step outside a buffered transaction)."""
    await conn.execute(_TRACE, list(rows))


async def write_outbox(conn: AsyncConnection, rows: Sequence[dict[str, Any]]) -> None:
    """Write outbox rows at once (a step outside a buffered transaction)."""
    await conn.execute(_OUTBOX, list(rows))


async def write_form_writes(conn: AsyncConnection, rows: Sequence[dict[str, Any]]) -> None:
    """Write form-write history rows at once (outside a buffered transaction)."""
    await conn.execute(_FORM_WRITES, list(rows))
