"""SQL expressions that are written differently on PostgreSQL and SQLite,
each one construct with two renderings chosen by SQLAlchemy's compiler
(``@compiles`` per dialect), so a query above ``db/`` uses them without
knowing the dialect (issue 16: no dialect branch outside ``db/``).

- :func:`milliseconds_between` / :func:`seconds_between`: the time from one
  timestamp to another. PostgreSQL subtracts the ``timestamptz`` values and
  takes the interval's epoch (``date_part`` is double precision; ``extract``
  is numeric, cast to float). SQLite stores UTC ISO text: the difference of
  two ``julianday`` values, exact to about a millisecond.
- :func:`timestamp_minus`: a timestamp column moved back by a fixed
  ``timedelta`` (``- interval`` on PostgreSQL; ``datetime(x, '-N seconds')``
  on SQLite, whose text compares correctly with the stored ISO text).
- :func:`json_text_contains`: a case-insensitive literal substring of a JSON
  column's text. SQLite stores JSON ASCII-escaped (``é`` is ``\\u00e9``), so
  there the keyword's escaped spelling matches too.
- :func:`in_batch`: a column among the values of a subquery that locks and
  limits a batch. PostgreSQL: ``= ANY(ARRAY(subquery))``, the batch one
  InitPlan and the outer rows found by index (``IN (subquery)`` may be
  planned as a hash semi-join over a sequential scan of the whole table);
  SQLite: ``IN (subquery)``.

Every construct renders inside parentheses, so it composes with any
operator. Other dialects (e.g. ``str(statement)``) get the SQLite rendering.
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from sqlalchemy import Boolean, Float, Interval, Text, any_, cast, extract, func, literal, or_
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.elements import ColumnElement, Grouping
from sqlalchemy.sql.functions import FunctionElement

from flowledger.db.like import ESCAPE, escape_like


def _render(compiler: SQLCompiler, expr: ColumnElement[Any], kw: dict[str, Any]) -> str:
    return compiler.process(Grouping(expr), **kw)


def _args(element: FunctionElement[Any]) -> list[Any]:
    return list(element.clauses.clauses)


class _MillisecondsBetween(FunctionElement[float]):
    type = Float()
    name = "milliseconds_between"
    inherit_cache = True


class _SecondsBetween(FunctionElement[float]):
    type = Float()
    name = "seconds_between"
    inherit_cache = True


class _TimestampMinus(FunctionElement[Any]):
    name = "timestamp_minus"
    inherit_cache = True


class _JsonTextContains(FunctionElement[bool]):
    type = Boolean()
    name = "json_text_contains"
    inherit_cache = True

    def self_group(self, against: Any = None) -> Any:
        # a condition already (LIKE), not a boolean value to compare with 1
        # where booleans are not native (SQLite)
        return self


class _InBatch(FunctionElement[bool]):
    type = Boolean()
    name = "in_batch"
    inherit_cache = True

    def self_group(self, against: Any = None) -> Any:
        return self  # a condition already


def milliseconds_between(start: Any, end: Any) -> ColumnElement[float]:
    """Milliseconds from ``start`` to ``end`` as a double-precision value."""
    return _MillisecondsBetween(start, end)


def seconds_between(start: Any, end: Any) -> ColumnElement[float]:
    """Seconds from ``start`` to ``end``; on SQLite rounded to the millisecond
    (``julianday`` is exact to about that much)."""
    return _SecondsBetween(start, end)


def timestamp_minus(column: Any, delta: timedelta) -> ColumnElement[Any]:
    """``column - delta`` (whole seconds of ``delta`` on SQLite)."""
    modifier = f"-{int(delta.total_seconds())} seconds"
    moved = _TimestampMinus(column, literal(delta, Interval()), literal(modifier))
    moved.type = column.type
    return moved


def json_text_contains(column: Any, keyword: str) -> ColumnElement[bool]:
    """The JSON ``column``'s text contains ``keyword`` literally (``%``,
    ``_`` and ``\\`` match themselves), case-insensitively: an ``ILIKE`` over
    the text cast, which a pg_trgm index on that cast serves."""
    patterns = [literal(f"%{escape_like(keyword)}%", Text())]
    escaped = json.dumps(keyword)[1:-1]
    if escaped != keyword:
        patterns.append(literal(f"%{escape_like(escaped)}%", Text()))
    return _JsonTextContains(cast(column, Text), *patterns)


def in_batch(column: Any, batch: Any) -> ColumnElement[bool]:
    """``column`` is one of the values of the scalar subquery ``batch``."""
    return _InBatch(column, batch)


@compiles(_MillisecondsBetween, "postgresql")
def _milliseconds_pg(element: _MillisecondsBetween, compiler: SQLCompiler, **kw: Any) -> str:
    start, end = _args(element)
    return _render(compiler, cast(func.date_part("epoch", end - start), Float) * 1000.0, kw)


@compiles(_MillisecondsBetween)
def _milliseconds_sqlite(element: _MillisecondsBetween, compiler: SQLCompiler, **kw: Any) -> str:
    start, end = _args(element)
    return _render(compiler, (func.julianday(end) - func.julianday(start)) * 86_400_000.0, kw)


@compiles(_SecondsBetween, "postgresql")
def _seconds_pg(element: _SecondsBetween, compiler: SQLCompiler, **kw: Any) -> str:
    start, end = _args(element)
    return _render(compiler, cast(extract("epoch", end - start), Float), kw)


@compiles(_SecondsBetween)
def _seconds_sqlite(element: _SecondsBetween, compiler: SQLCompiler, **kw: Any) -> str:
    start, end = _args(element)
    days = func.julianday(end) - func.julianday(start)
    return _render(compiler, func.round(days * 86400.0, 3), kw)


@compiles(_TimestampMinus, "postgresql")
def _minus_pg(element: _TimestampMinus, compiler: SQLCompiler, **kw: Any) -> str:
    column, interval, _modifier = _args(element)
    return _render(compiler, column - interval, kw)


@compiles(_TimestampMinus)
def _minus_sqlite(element: _TimestampMinus, compiler: SQLCompiler, **kw: Any) -> str:
    column, _interval, modifier = _args(element)
    return _render(compiler, func.datetime(column, modifier), kw)


@compiles(_JsonTextContains, "postgresql")
def _contains_pg(element: _JsonTextContains, compiler: SQLCompiler, **kw: Any) -> str:
    text, pattern, *_escaped = _args(element)
    return _render(compiler, text.ilike(pattern, escape=ESCAPE), kw)


@compiles(_JsonTextContains)
def _contains_sqlite(element: _JsonTextContains, compiler: SQLCompiler, **kw: Any) -> str:
    text, *patterns = _args(element)
    return _render(compiler, or_(*(text.ilike(p, escape=ESCAPE) for p in patterns)), kw)


@compiles(_InBatch, "postgresql")
def _in_batch_pg(element: _InBatch, compiler: SQLCompiler, **kw: Any) -> str:
    column, batch = _args(element)
    return _render(compiler, column == any_(func.array(batch)), kw)


@compiles(_InBatch)
def _in_batch_sqlite(element: _InBatch, compiler: SQLCompiler, **kw: Any) -> str:
    column, batch = _args(element)
    return _render(compiler, column.in_(batch), kw)
