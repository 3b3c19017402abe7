"""Rows of one table sent to PostgreSQL as one JSON document (issue 28 items
2, 5): which of the table's columns the engine's rows carry, and the
``INSERT … SELECT … FROM json_to_recordset(…)`` that writes them in order.

The column names and their SQL types come from the table's definition
(``db/engine_schema.py``), never retyped by hand: a :class:`JsonRows` names
only the columns its rows leave out (the id the database draws, the columns
a later step fills in). A column the engine does not send is left to its
default, as a Core insert would; a new column in a table is part of its
document unless listed here as left out. Timestamp columns
(:class:`~flowledger.db.types.UTCDateTime`) travel as ISO UTC text, JSON
columns keep a JSON ``null`` as the JSON type stores it."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cached_property
from typing import Any

from sqlalchemy import JSON, Column, String, Table
from sqlalchemy.dialects import postgresql

from flowledger.db.types import UTCDateTime

_DIALECT = postgresql.dialect()  # type: ignore[no-untyped-call]  # compiles type names only


def utc_text(value: datetime) -> str:
    """``value`` as ISO text in UTC (an aware datetime only)."""
    if value.tzinfo is None:
        raise ValueError("naive datetimes are not accepted; use UTC-aware values")
    return value.astimezone(UTC).isoformat()


@dataclass(frozen=True)
class JsonRows:
    """The rows of ``table`` the engine writes, every column but ``omit``."""

    table: Table
    omit: tuple[str, ...] = ()

    @cached_property
    def columns(self) -> tuple[Column[Any], ...]:
        unknown = set(self.omit) - set(self.table.c.keys())
        if unknown:
            raise ValueError(f"{self.table.name} has no column {sorted(unknown)}")
        return tuple(c for c in self.table.c if c.name not in self.omit)

    @cached_property
    def stamps(self) -> tuple[str, ...]:
        """The timestamp columns (sent as ISO UTC text)."""
        return tuple(c.name for c in self.columns if isinstance(c.type, UTCDateTime))

    def document(self, rows: Sequence[Mapping[str, Any]]) -> str:
        """``rows`` as one JSON array, timestamps as ISO UTC text."""
        out = []
        for row in rows:
            item = {**row, **{k: None if row[k] is None else utc_text(row[k]) for k in self.stamps}}
            out.append(item)
        return json.dumps(out)

    def insert(self, param: str) -> str:
        """``INSERT INTO <table> (cols) SELECT … `` of the rows in the JSON
        document ``param`` (a placeholder), in their order."""
        names = [c.name for c in self.columns]
        definitions = [f"{c.name} {_record_type(c)}" for c in self.columns]
        selected = [_value(c) for c in self.columns]
        aliases = ", ".join(names)
        return (
            f"INSERT INTO {self.table.name} ({', '.join(names)}) SELECT {', '.join(selected)} "
            f"FROM ROWS FROM (json_to_recordset(CAST({param} AS json)) "
            f"AS ({', '.join(definitions)})) WITH ORDINALITY AS r({aliases}, n) ORDER BY r.n"
        )


def _record_type(column: Column[Any]) -> str:
    """The type a column's value is read as from the document: the column's
    own, but strings unbounded (the insert, not the read, refuses a value
    too long for the column), as the ledger's bulk insert does."""
    if isinstance(column.type, String):
        return "text"
    return str(column.type.compile(dialect=_DIALECT))


def _value(column: Column[Any]) -> str:
    """A column's value from the document's row ``r`` (a JSON null stays a
    JSON null in a JSON column, as the JSON type stores it)."""
    if isinstance(column.type, JSON):
        return f"COALESCE(r.{column.name}, 'null'::jsonb)"
    return f"r.{column.name}"
