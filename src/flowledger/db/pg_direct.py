"""Core statements on PostgreSQL without SQLAlchemy's per-statement execution
machinery (issue 15: the engine's write path), on SQLAlchemy's public API
only (issue 28 item 3).

SQLAlchemy's asyncio layer spends about 90 µs of CPU per statement on top of
psycopg's own 75 µs (a greenlet hop, an execution context, a cursor wrapper,
a result built from cursor metadata); an engine step runs about ten
statements, so that layer was a third of a worker's CPU. A
:class:`DirectConnection` compiles a statement object once, at its second
use (``ClauseElement.compile`` with the connection's dialect, kept while
the object lives: the engine's statements are module constants, built once;
a statement's first use goes through SQLAlchemy, see FIRST_USE),
binds its parameters with the bind processors of their types
(``TypeEngine.dialect_impl(…).bind_processor``), expands ``IN`` lists with
``SQLCompiler.construct_expanded_state`` and sends the text on the
connection's own psycopg ``AsyncConnection`` (the same text SQLAlchemy
sends, so psycopg's prepared statements are shared). Rows come back as
SQLAlchemy ``Row`` objects, with the result processors of the statement's
columns (``exported_columns``) applied, in a :class:`DirectResult`.

It takes the direct path only where the result is the same: one parameter
set (a dict, or a list of one); no execution options; a connection inside a
transaction that SQLAlchemy began (or in autocommit), so SQLAlchemy's commit
and rollback still end it; a statement without Python-side defaults,
implicit RETURNING, schema translation or tuple-typed parameters.
Everything else (an executemany, a statement on a connection SQLAlchemy has
not begun), and every statement on SQLite, goes through SQLAlchemy as
before. psycopg errors, and values a bind processor refuses, are raised as
SQLAlchemy raises them (``DBAPIError.instance``: ``IntegrityError``,
``OperationalError``, ``StatementError`` …); when the error is a lost
connection (the dialect's ``is_disconnect``) the connection is invalidated
first (``AsyncConnection.invalidate``), so the rollback and check-in that
follow never touch the dropped socket. SQLAlchemy's own path also makes its
pool recycle the connections opened before a disconnect; here the idle ping
(``db/idle_ping.py``) finds those after a restart.

No private attribute of SQLAlchemy is read (the ``<2.2`` pin that guarded
them is lifted); tests/integration/test_pg_direct.py compares both paths
statement by statement, so an upgrade that changes a result fails the
tests, not production. A :class:`DirectEngine`'s ``observers`` let tests
and benchmarks see these statements (SQLAlchemy's cursor events do not).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Mapping
from typing import Any

import psycopg
from psycopg.rows import tuple_row
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine.result import IteratorResult, SimpleResultMetaData
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine
from sqlalchemy.sql.elements import ClauseElement
from sqlalchemy.sql.sqltypes import TupleType

Observer = Callable[[AsyncConnection, str], None]  # (connection, SQL text), before sending


class DirectResult(IteratorResult[Any]):
    """A buffered result of a statement sent directly: the ``Result`` API
    plus ``rowcount`` and ``returns_rows``, as a ``CursorResult`` has them."""

    def __init__(
        self, metadata: SimpleResultMetaData, rows: list[Any], rowcount: int, returns_rows: bool
    ) -> None:
        super().__init__(metadata, iter(rows))
        self.rowcount = rowcount
        self.returns_rows = returns_rows


_MAX_SHAPES = 64  # expanded texts and result shapes kept per compiled statement


class _Plan:
    """What is fixed per statement object and parameter keys: its compiled
    form, text, bind processors and escaped names, its result columns and,
    as they are met, its ``IN``-list expansions by list lengths and its
    result metadata by column type codes."""

    __slots__ = (
        "binds",
        "columns",
        "compiled",
        "escaped",
        "expanding",
        "expansions",
        "lists",
        "results",
        "sql",
    )

    def __init__(self, statement: Any, compiled: Any, dialect: Any) -> None:
        self.compiled = compiled
        self.expanding = bool(compiled.literal_execute_params or compiled.post_compile_params)
        self.sql: bytes = compiled.string.encode()
        binds: dict[str, Callable[[Any], Any]] = {}
        for param, name in compiled.bind_names.items():
            if param in compiled.literal_execute_params:
                continue  # rendered into the text, never bound
            process = param.type.dialect_impl(dialect).bind_processor(dialect)
            if process is not None:
                binds[name] = process
        self.binds: Mapping[str, Callable[[Any], Any]] = binds
        self.escaped: Mapping[str, str] | None = compiled.escaped_bind_names or None
        self.columns: list[Any] = list(getattr(statement, "exported_columns", None) or [])
        # the expanding parameters whose expansion depends on their lengths
        # alone (scalar IN lists; not literal_execute): cacheable
        self.lists: tuple[str, ...] | None = None
        if compiled.post_compile_params and not compiled.literal_execute_params:
            self.lists = tuple(compiled.bind_names[p] for p in compiled.post_compile_params)
        self.expansions: dict[tuple[int, ...], tuple[bytes, dict[str, Any], dict[str, list[str]]]]
        self.expansions = {}
        self.results: dict[tuple[Any, ...], tuple[SimpleResultMetaData, list[Any] | None]] = {}

    def expand(
        self, parameters: Mapping[str, Any] | None, values: dict[str, Any]
    ) -> tuple[bytes, Mapping[str, Any], dict[str, Any]]:
        """The text, bind processors and values of this call's ``IN`` lists,
        each list replaced by its numbered elements, as SQLAlchemy expands them."""
        shape: tuple[int, ...] | None = None
        if self.lists is not None and all(
            isinstance(values.get(name), list | tuple) for name in self.lists
        ):
            shape = tuple(len(values[name]) for name in self.lists)
            hit = self.expansions.get(shape)
            if hit is not None:
                sql, binds, expansion = hit
                for name, keys in expansion.items():
                    values.update(zip(keys, values.pop(name), strict=True))
                return sql, binds, values
        state = self.compiled.construct_expanded_state(parameters or None, escape_names=False)
        sql = state.statement.encode()
        binds = {**self.binds, **state.processors}
        if shape is not None and len(self.expansions) < _MAX_SHAPES:
            self.expansions[shape] = (sql, binds, dict(state.parameter_expansion))
        return sql, binds, dict(state.parameters)


def _usable(compiled: Any) -> bool:
    return not (
        compiled.insert_prefetch
        or compiled.update_prefetch
        or compiled.implicit_returning
        or compiled.schema_translate_map
        or compiled.for_executemany
        or (compiled.escaped_bind_names and compiled.post_compile_params)
        or any(isinstance(p.type, TupleType) for p in compiled.bind_names)
    )


# a statement object's plans by parameter keys (False: it must go through
# SQLAlchemy), kept by the engine per live statement object (by identity: a
# statement's ``==`` may build SQL) and dropped when the object is collected.
#
# FIRST_USE: a statement object's first execution goes through SQLAlchemy and
# only its later ones are planned here. Statements built per call (a
# console read's filters, a drawer's view) are used once: compiling each
# anew costs about 1 ms, while SQLAlchemy's own path finds their compiled
# form in its cache (keyed by the statement's structure, not its identity)
# for a tenth of that. The engine's statements are module constants: planned
# from their second use on.
Plans = dict[int, dict[tuple[str, ...], "_Plan | bool"]]


def _remember(plans: Plans, statement: Any) -> dict[tuple[str, ...], _Plan | bool]:
    """Note ``statement``'s first use: its (empty) plans by parameter keys."""
    key = id(statement)
    found: dict[tuple[str, ...], _Plan | bool] = {}
    plans[key] = found
    weakref.finalize(statement, plans.pop, key, None)
    return found


def _plan(
    conn: AsyncConnection, statement: Any, parameters: Mapping[str, Any] | None
) -> tuple[_Plan, bytes, dict[str, Any]] | None:
    """The plan, the SQL text and the DBAPI parameters of ``statement``, or
    None when it must go through SQLAlchemy."""
    if not isinstance(statement, ClauseElement) or statement.get_execution_options():  # type: ignore[attr-defined]
        return None
    sync = conn.sync_connection
    if sync is None or sync.get_execution_options().get("compiled_cache", True) is None:
        return None
    dialect = sync.dialect
    keys = tuple(sorted(parameters)) if parameters else ()
    engine: DirectEngine = conn.engine  # type: ignore[assignment]
    plans = engine.plans.get(id(statement))
    if plans is None:  # first use of this object: SQLAlchemy's path (see FIRST_USE)
        plans = _remember(engine.plans, statement)
        if not engine.plan_first_use:
            return None
    plan = plans.get(keys)
    if plan is None:  # first use of this statement with these keys: decide once
        compiled: Any = statement.compile(dialect=dialect, column_keys=list(keys))
        plan = _Plan(statement, compiled, dialect) if _usable(compiled) else False
        plans[keys] = plan
    if not isinstance(plan, _Plan):
        return None
    try:
        values = plan.compiled.construct_params(parameters or None, escape_names=False)
        binds: Mapping[str, Any] = plan.binds
        sql = plan.sql
        if plan.expanding:  # IN lists: the text depends on their lengths, as in SQLAlchemy
            sql, binds, values = plan.expand(parameters, values)
        escaped = plan.escaped or {}
        params = {
            escaped.get(key, key): (binds[key](value) if key in binds else value)
            for key, value in (values or {}).items()
        }
    except Exception as error:  # a bind processor refused a value: as SQLAlchemy reports it
        raise sa_exc.DBAPIError.instance(
            plan.compiled.string, parameters, error, psycopg.Error, dialect=dialect
        ) from error
    return plan, sql, params


def _metadata(
    plan: _Plan | None,
    description: Any,
    dialect: Any,
    text_results: dict[tuple[str, ...], SimpleResultMetaData],
) -> tuple[SimpleResultMetaData, list[Any] | None]:
    """Row keys (and column objects, so ``row._mapping[column]`` works) and
    the columns' result processors (None: none to apply), as SQLAlchemy
    would build them; built once per statement and result shape."""
    columns = plan.columns if plan is not None else []
    names = tuple(d.name for d in description)
    if len(columns) != len(description):  # text: keys only, as SQLAlchemy has them
        found = text_results.get(names)
        if found is None:
            found = SimpleResultMetaData(names)
            if len(text_results) < 1024:
                text_results[names] = found
        return found, None
    assert plan is not None
    shape = tuple(d.type_code for d in description)
    hit = plan.results.get(shape)
    if hit is None:
        processors = [
            column.type.dialect_impl(dialect).result_processor(dialect, code)
            for column, code in zip(columns, shape, strict=True)
        ]
        extra = [
            (column, *((column.key,) if column.key != name else ()))
            for column, name in zip(columns, names, strict=True)
        ]
        hit = (
            SimpleResultMetaData(names, extra=extra),
            processors if any(processors) else None,
        )
        if len(plan.results) < _MAX_SHAPES:
            plan.results[shape] = hit
    return hit


class DirectConnection(AsyncConnection):
    """An ``AsyncConnection`` whose ``execute`` and ``exec_driver_sql`` send
    what they can directly on psycopg (see the module docstring)."""

    def _driver(self) -> psycopg.AsyncConnection[Any] | None:
        sync = self.sync_connection
        if sync is None or sync.invalidated or sync.closed:
            return None
        driver = sync.connection.driver_connection
        if not isinstance(driver, psycopg.AsyncConnection) or driver.closed:
            return None
        # inside SQLAlchemy's transaction (so its commit ends ours) or autocommit
        if not (sync.in_transaction() or driver.autocommit):
            return None
        return driver

    async def execute(
        self,
        statement: Any,
        parameters: Any = None,
        *,
        execution_options: Any = None,
    ) -> Any:
        if isinstance(parameters, list) and len(parameters) == 1:
            parameters = parameters[0]  # one parameter set: an execute, as in SQLAlchemy
        if execution_options is None and (parameters is None or isinstance(parameters, Mapping)):
            driver = self._driver()
            if driver is not None:
                planned = _plan(self, statement, parameters)
                if planned is not None:
                    return await self._send(driver, *planned)
        return await super().execute(statement, parameters, execution_options=execution_options)

    async def exec_driver_sql(
        self,
        statement: str,
        parameters: Any = None,
        execution_options: Any = None,
    ) -> Any:
        if execution_options is None and (parameters is None or isinstance(parameters, Mapping)):
            driver = self._driver()
            if driver is not None:
                return await self._send(driver, None, statement.encode(), parameters)
        return await super().exec_driver_sql(statement, parameters, execution_options)

    async def _send(
        self,
        driver: psycopg.AsyncConnection[Any],
        plan: _Plan | None,
        sql: bytes,
        params: Mapping[str, Any] | None,
    ) -> DirectResult:
        engine: DirectEngine = self.engine  # type: ignore[assignment]
        for observe in engine.observers:
            observe(self, sql.decode())
        try:
            cursor = driver.cursor(row_factory=tuple_row)
            await cursor.execute(sql, params)
            description = cursor.description
            rows = await cursor.fetchall() if description is not None else []
        except psycopg.Error as error:
            raise await self._raised(driver, error, sql, params) from error
        if description is None:
            return DirectResult(SimpleResultMetaData([]), [], cursor.rowcount, False)
        dialect = self.sync_connection.dialect  # type: ignore[union-attr]
        metadata, processors = _metadata(plan, description, dialect, engine.text_results)
        if processors is not None:
            rows = [
                tuple(v if p is None else p(v) for p, v in zip(processors, row, strict=True))
                for row in rows
            ]
        return DirectResult(metadata, rows, cursor.rowcount, True)

    async def _raised(
        self,
        driver: psycopg.AsyncConnection[Any],
        error: psycopg.Error,
        sql: bytes,
        params: Mapping[str, Any] | None,
    ) -> sa_exc.DBAPIError:
        """``error`` as SQLAlchemy raises it; on a lost connection the
        connection is invalidated first, so the rollback and check-in that
        follow do not talk to a socket the server dropped."""
        sync = self.sync_connection
        assert sync is not None
        dialect = sync.dialect
        lost = driver.closed or driver.broken
        if lost:
            await self.invalidate(error)
        wrapped = sa_exc.DBAPIError.instance(
            sql.decode(),
            params,
            error,
            psycopg.Error,
            connection_invalidated=lost,
            dialect=dialect,
        )
        assert isinstance(wrapped, sa_exc.DBAPIError)
        return wrapped


class DirectEngine(AsyncEngine):
    """An ``AsyncEngine`` whose connections are :class:`DirectConnection`.
    ``observers`` are called before each statement sent directly;
    ``plan_first_use`` sends a statement object directly from its first use
    on (tests of the direct path set it; see FIRST_USE for why it is off).
    Engines derived by ``execution_options`` keep the class, the observers,
    that setting, the result metadata of text statements (by column names)
    and the plans of the statements compiled so far."""

    def __init__(
        self,
        sync_engine: Any,
        observers: list[Observer] | None = None,
        text_results: dict[tuple[str, ...], SimpleResultMetaData] | None = None,
        plans: Plans | None = None,
        plan_first_use: bool = False,
    ) -> None:
        super().__init__(sync_engine)
        self.observers: list[Observer] = observers if observers is not None else []
        self.text_results = text_results if text_results is not None else {}
        self.plans: Plans = plans if plans is not None else {}
        self.plan_first_use = plan_first_use

    def connect(self) -> DirectConnection:
        return DirectConnection(self)

    def execution_options(self, **options: Any) -> DirectEngine:
        return DirectEngine(
            self.sync_engine.execution_options(**options),
            self.observers,
            self.text_results,
            self.plans,
            self.plan_first_use,
        )
