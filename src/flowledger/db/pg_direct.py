"""Core statements on PostgreSQL without SQLAlchemy's per-statement execution
machinery (issue 15: the engine's write path).

SQLAlchemy's asyncio layer spends about 90 µs of CPU per statement on top of
psycopg's own 75 µs (a greenlet hop, an execution context, a cursor wrapper,
a result built from cursor metadata); an engine step runs about ten
statements, so that layer was a third of a worker's CPU. A
:class:`DirectConnection` compiles a statement exactly as SQLAlchemy does
(same compiled cache, same SQL text, same bind processors, so psycopg's
prepared statements are shared) and sends it on the connection's own
psycopg ``AsyncConnection``; rows come back as SQLAlchemy ``Row`` objects
(with the result processors of the columns' types applied) in a
:class:`DirectResult`.

It takes the direct path only where the result is the same: one parameter
set (a dict, or a list of one); no execution options; a connection inside a
transaction that SQLAlchemy began (or in autocommit), so SQLAlchemy's commit
and rollback still end it; a statement without Python-side defaults,
implicit RETURNING or schema translation. ``IN`` lists are expanded as
SQLAlchemy expands them. Everything else (an executemany, a statement on a
connection SQLAlchemy has not begun), and every statement on SQLite, goes
through SQLAlchemy as before. psycopg errors, and values a bind processor
refuses, are raised as SQLAlchemy raises them (``IntegrityError``,
``OperationalError``, ``StatementError`` …); a psycopg error goes through
SQLAlchemy's own handler, so a lost connection is invalidated as on
SQLAlchemy's path (its rollback and check-in then never touch the dropped
socket).

This reads SQLAlchemy internals (``_compile_w_cache``, ``_bind_processors``,
``_result_columns``, ``Connection._handle_dbapi_exception``); pyproject pins the minor version and
tests/integration/test_pg_direct.py compares both paths statement by
statement, so an upgrade that changes them fails the tests, not production.
A :class:`DirectEngine`'s ``observers`` let tests and benchmarks see these
statements (SQLAlchemy's cursor events do not).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import psycopg
from psycopg.rows import tuple_row
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine.result import IteratorResult, SimpleResultMetaData
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine
from sqlalchemy.sql import compiler
from sqlalchemy.sql.elements import ClauseElement
from sqlalchemy.util import greenlet_spawn

Observer = Callable[[AsyncConnection, str], None]  # (connection, SQL text), before sending

_PLAN_ATTR = "_flowledger_direct_plan"


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
    """What is fixed per compiled statement: its text, its bind processors and
    escaped names, its result columns (keys, extra keys, types) and, as they
    are met, its ``IN``-list expansions by list lengths and its result
    metadata by column type codes."""

    __slots__ = (
        "binds",
        "columns",
        "escaped",
        "expanding",
        "expansions",
        "lists",
        "results",
        "sql",
    )

    def __init__(self, compiled: compiler.SQLCompiler) -> None:
        self.expanding = bool(compiled.literal_execute_params or compiled.post_compile_params)
        self.sql: bytes = compiled.string.encode()
        self.binds: Mapping[str, Callable[[Any], Any]] = compiled._bind_processors  # type: ignore[assignment]
        self.escaped: Mapping[str, str] | None = compiled.escaped_bind_names or None
        self.columns = compiled._result_columns
        # the expanding parameters whose expansion depends on their lengths
        # alone (scalar IN lists; not literal_execute, not tuples): cacheable
        self.lists: tuple[str, ...] | None = None
        if compiled.post_compile_params and not compiled.literal_execute_params:
            params = compiled.post_compile_params
            if not any(p.type._is_tuple_type for p in params):
                self.lists = tuple(compiled.bind_names[p] for p in params)
        self.expansions: dict[tuple[int, ...], tuple[bytes, dict[str, Any], dict[str, list[str]]]]
        self.expansions = {}
        self.results: dict[tuple[Any, ...], SimpleResultMetaData] = {}

    def expand(self, compiled: Any, values: dict[str, Any]) -> tuple[bytes, Mapping[str, Any]]:
        """The text and bind processors of this call's ``IN`` lists; replaces
        each list in ``values`` by its numbered elements, as SQLAlchemy does."""
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
                return sql, binds
        expanded = compiled._process_parameters_for_postcompile(values)  # updates values
        sql = expanded.statement.encode()
        binds = {**self.binds, **expanded.processors}
        if shape is not None and len(self.expansions) < _MAX_SHAPES:
            self.expansions[shape] = (sql, binds, dict(expanded.parameter_expansion))
        return sql, binds


def _usable(compiled: Any) -> bool:
    return not (
        compiled.insert_prefetch
        or compiled.update_prefetch
        or compiled.implicit_returning
        or compiled.schema_translate_map
        or compiled.for_executemany
    )


def _plan(
    conn: AsyncConnection, statement: Any, parameters: Mapping[str, Any] | None
) -> tuple[_Plan, bytes, dict[str, Any]] | None:
    """The plan, the SQL text and the DBAPI parameters of ``statement``, or
    None when it must go through SQLAlchemy."""
    if not isinstance(statement, ClauseElement) or statement._execution_options:  # type: ignore[attr-defined]
        return None
    sync = conn.sync_connection
    if sync is None or sync._execution_options.get("compiled_cache", True) is None:
        return None
    dialect = sync.dialect
    keys = sorted(parameters) if parameters else []
    compiled: Any
    compiled, extracted, param_dict, _hit = statement._compile_w_cache(
        dialect=dialect,
        compiled_cache=sync.engine._compiled_cache,
        column_keys=keys,
        for_executemany=False,
        schema_translate_map=None,
        linting=dialect.compiler_linting | compiler.WARN_LINTING,
    )
    plan: _Plan | bool | None = getattr(compiled, _PLAN_ATTR, None)
    if plan is None:  # first use of this compiled form: decide once
        plan = _Plan(compiled) if _usable(compiled) else False
        setattr(compiled, _PLAN_ATTR, plan)
    if not isinstance(plan, _Plan):
        return None
    try:
        values = compiled.construct_params(
            parameters or None,
            escape_names=False,
            extracted_parameters=extracted,
            _collected_params=param_dict,
        )
        binds: Mapping[str, Any] = plan.binds
        sql = plan.sql
        if plan.expanding:  # IN lists: the text depends on their lengths, as in SQLAlchemy
            sql, binds = plan.expand(compiled, values)
        escaped = plan.escaped or {}
        params = {
            escaped.get(key, key): (binds[key](value) if key in binds else value)
            for key, value in (values or {}).items()
        }
    except Exception as error:  # a bind processor refused a value: as SQLAlchemy reports it
        raise sa_exc.DBAPIError.instance(
            compiled.string, parameters, error, psycopg.Error, dialect=dialect
        ) from error
    return plan, sql, params


def _metadata(
    plan: _Plan | None,
    description: Any,
    dialect: Any,
    text_results: dict[tuple[str, ...], SimpleResultMetaData],
) -> SimpleResultMetaData:
    """Row keys (and column objects, so ``row._mapping[column]`` works) and
    the columns' result processors, as SQLAlchemy would build them; built
    once per statement and result shape."""
    columns = plan.columns if plan is not None else []
    if len(columns) != len(description):  # text: keys only, as SQLAlchemy has them
        names = tuple(d.name for d in description)
        found = text_results.get(names)
        if found is None:
            found = SimpleResultMetaData(names)
            if len(text_results) < 1024:
                text_results[names] = found
        return found
    assert plan is not None
    shape = tuple(d.type_code for d in description)
    found = plan.results.get(shape)
    if found is None:
        processors = [
            entry.type._cached_result_processor(dialect, code)
            for entry, code in zip(columns, shape, strict=True)
        ]
        found = SimpleResultMetaData(
            [entry.keyname for entry in columns],
            extra=[entry.objects for entry in columns],
            _processors=processors if any(processors) else None,
        )
        if len(plan.results) < _MAX_SHAPES:
            plan.results[shape] = found
    return found


class DirectConnection(AsyncConnection):
    """An ``AsyncConnection`` whose ``execute`` and ``exec_driver_sql`` send
    what they can directly on psycopg (see the module docstring)."""

    def _driver(self) -> psycopg.AsyncConnection[Any] | None:
        sync = self.sync_connection
        if sync is None or sync.invalidated:
            return None
        fairy = sync._dbapi_connection
        if fairy is None:
            return None
        driver = fairy.driver_connection
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
            # SQLAlchemy's own handler: the same exception class, handle_error
            # events, and on a disconnect the connection (and the pool's older
            # connections) invalidated, so the rollback and check-in that
            # follow do not talk to a socket the server dropped. It always
            # raises; it needs the greenlet its rollback and close run in.
            sync = self.sync_connection
            assert sync is not None
            await greenlet_spawn(
                sync._handle_dbapi_exception, error, sql.decode(), params, None, None
            )
            raise  # not reached: the handler raises
        if description is None:
            return DirectResult(SimpleResultMetaData([]), [], cursor.rowcount, False)
        dialect = self.sync_connection.dialect  # type: ignore[union-attr]
        metadata = _metadata(plan, description, dialect, engine.text_results)
        return DirectResult(metadata, rows, cursor.rowcount, True)


class DirectEngine(AsyncEngine):
    """An ``AsyncEngine`` whose connections are :class:`DirectConnection`.
    ``observers`` are called before each statement sent directly; engines
    derived by ``execution_options`` keep the class, the observers and the
    result metadata of text statements (by column names)."""

    _connection_cls = DirectConnection

    def __init__(
        self,
        sync_engine: Any,
        observers: list[Observer] | None = None,
        text_results: dict[tuple[str, ...], SimpleResultMetaData] | None = None,
    ) -> None:
        super().__init__(sync_engine)
        self.observers: list[Observer] = observers if observers is not None else []
        self.text_results = text_results if text_results is not None else {}

    def execution_options(self, **options: Any) -> DirectEngine:
        return DirectEngine(
            self.sync_engine.execution_options(**options), self.observers, self.text_results
        )
