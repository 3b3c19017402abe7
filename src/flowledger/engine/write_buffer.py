"""The engine's per-transaction write buffer (issue 15 item 2): the engine
trace rows (E-8), outbox events (E-10) and token moves (E-4) of every step
in one transaction, written just before it commits — each table once (one
executemany), in the order the steps produced them.

The buffer exists only inside a :meth:`~flowledger.db.database.Database.begin`
transaction (it registers as one of its pre-commit buffers); a step on any
other connection writes at once, as before. A read in the step that must see
buffered rows flushes first (:func:`flush`; the token queries do it for the
moves). Nothing changes in what commits: the rows commit with the step's
other writes or roll back with them.

On PostgreSQL one statement writes all three (data-modifying CTEs over
``unnest`` arrays, one fixed shape, so psycopg prepares it once); on SQLite,
in process, one executemany per table."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import bindparam, text, update
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db.database import pre_commit
from flowledger.db.engine_schema import workflow_event_outbox, workflow_tokens, workflow_trace

_NAME = "engine_writes"
_TRACE = workflow_trace.insert()
_OUTBOX = workflow_event_outbox.insert()
_MOVE = (
    update(workflow_tokens)
    .where(workflow_tokens.c.id == bindparam("token_id"))
    .values(node_key=bindparam("to_node"))
)

_TRACE_COLUMNS = (
    ("instance_id", "int"),
    ("trace_id", "text"),
    ("event", "text"),
    ("node_key", "text"),
    ("token_id", "int"),
    ("task_id", "int"),
    ("job_id", "int"),
    ("detail", "jsonb"),
    ("created_at", "timestamptz"),
)
_OUTBOX_COLUMNS = (
    ("tenant_id", "text"),
    ("instance_id", "int"),
    ("definition_key", "text"),
    ("event_type", "text"),
    ("payload", "jsonb"),
    ("status", "text"),
    ("trace_id", "text"),
    ("created_at", "timestamptz"),
)


def _unnest(prefix: str, columns: tuple[tuple[str, str], ...]) -> str:
    arrays = ", ".join(f"CAST(:{prefix}{name} AS {kind}[])" for name, kind in columns)
    names = ", ".join(name for name, _ in columns)
    return (
        f"({names}) SELECT {names} FROM unnest({arrays}) WITH ORDINALITY "
        f"AS r({names}, n) ORDER BY n"
    )


_PG_FLUSH = text(
    "WITH moved AS (UPDATE workflow_tokens AS t SET node_key = m.node_key "
    "FROM unnest(CAST(:m_id AS bigint[]), CAST(:m_node AS text[])) AS m(id, node_key) "
    "WHERE t.id = m.id), "
    f"events AS (INSERT INTO workflow_event_outbox {_unnest('o_', _OUTBOX_COLUMNS)}) "
    f"INSERT INTO workflow_trace {_unnest('t_', _TRACE_COLUMNS)}"
)


def _arrays(prefix: str, columns: tuple[tuple[str, str], ...], rows: list[dict[str, Any]]) -> Any:
    params: dict[str, list[Any]] = {}
    for name, kind in columns:
        values = [row[name] for row in rows]
        if kind == "jsonb":  # None is JSON null, as the JSON column type stores it
            values = [json.dumps(value) for value in values]
        params[prefix + name] = values
    return params


@dataclass
class WriteBuffer:
    conn: AsyncConnection
    trace: list[dict[str, Any]] = field(default_factory=list)
    outbox: list[dict[str, Any]] = field(default_factory=list)
    # token id -> the node it moved to, not yet written
    moves: dict[int, str] = field(default_factory=dict)

    async def flush_moves(self) -> None:
        if self.moves:
            rows = [{"token_id": t, "to_node": n} for t, n in self.moves.items()]
            self.moves = {}
            await self.conn.execute(_MOVE, rows)

    async def flush(self) -> None:
        if self.conn.dialect.name == "postgresql":
            await self._flush_postgresql()
            return
        await self.flush_moves()
        if self.outbox:
            rows, self.outbox = self.outbox, []
            await self.conn.execute(_OUTBOX, rows)
        if self.trace:
            rows, self.trace = self.trace, []
            await self.conn.execute(_TRACE, rows)

    async def _flush_postgresql(self) -> None:
        if not (self.moves or self.outbox or self.trace):
            return
        params = {
            "m_id": list(self.moves),
            "m_node": list(self.moves.values()),
            **_arrays("o_", _OUTBOX_COLUMNS, self.outbox),
            **_arrays("t_", _TRACE_COLUMNS, self.trace),
        }
        self.moves, self.outbox, self.trace = {}, [], []
        await self.conn.execute(_PG_FLUSH, params)


def buffer_of(conn: AsyncConnection, *, create: bool = True) -> WriteBuffer | None:
    """The write buffer of the transaction on ``conn`` (None outside a
    :meth:`Database.begin` transaction, or when ``create`` is false and no
    step has opened one)."""
    registry = pre_commit(conn)
    if registry is None:
        return None
    found = registry.get(_NAME)
    if found is None and create:
        found = registry[_NAME] = WriteBuffer(conn)
    assert found is None or isinstance(found, WriteBuffer)
    return found


async def add_trace(conn: AsyncConnection, row: dict[str, Any]) -> None:
    """Record one trace row: buffered when the transaction has a write buffer."""
    await _add(conn, "trace", row)


async def add_outbox(conn: AsyncConnection, row: dict[str, Any]) -> None:
    """Record one outbox event: buffered when the transaction has a write buffer."""
    await _add(conn, "outbox", row)


async def _add(conn: AsyncConnection, table: str, row: dict[str, Any]) -> None:
    buffer = buffer_of(conn)
    if buffer is None:
        await conn.execute(_TRACE if table == "trace" else _OUTBOX, [row])
    else:
        (buffer.trace if table == "trace" else buffer.outbox).append(row)


async def flush(conn: AsyncConnection) -> None:
    """Write what is buffered now (before a read that must see it)."""
    buffer = buffer_of(conn, create=False)
    if buffer is not None:
        await buffer.flush()


async def flush_moves(conn: AsyncConnection) -> None:
    """Write the buffered token moves now (before a token query)."""
    buffer = buffer_of(conn, create=False)
    if buffer is not None:
        await buffer.flush_moves()
