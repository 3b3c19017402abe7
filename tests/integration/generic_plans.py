"""A PostgreSQL statement's generic plan, as a prepared statement's cache
keeps it (psycopg prepares a statement on its sixth use; the ledger's hot
path and the engine's step force generic plans), and the plan of a
statement whose values are written in it (:func:`literal_plan`, as a
statement sent once is planned): for tests that read which index a plan
searches; and SQLite's plan of a Core statement (:func:`sqlite_plan`).
Shared by tests/integration/test_token_write_plans.py and
tests/integration/test_fenced_job_plans.py."""

from __future__ import annotations

import re
from typing import Any

from flowledger.db.database import Database

_NAMED = re.compile(r"%\((\w+)\)s")


async def generic_plan(
    db: Database, sql: str, params: dict[str, Any], emptied: str | None = "workflow_tokens"
) -> str:
    """EXPLAIN of ``sql`` (driver placeholders ``%(name)s``) as a generic
    plan of a prepared statement, in a transaction rolled back after, with
    the ``emptied`` tables truncated first (None: none)."""
    names: list[str] = []

    def positional(match: re.Match[str]) -> str:
        if match.group(1) not in names:
            names.append(match.group(1))
        return f"${names.index(match.group(1)) + 1}"

    prepared = _NAMED.sub(positional, sql)
    async with db.engine.connect() as conn, conn.begin():
        # the state the bench starts from (and a new installation's before
        # autovacuum first analyzes): never analyzed, emptied (reltuples -1),
        # which the planner takes for 10 pages. (A table whose statistics
        # say it is empty gets sequential scans even for a primary key, until
        # an ANALYZE replans.) Rolled back with the transaction.
        if emptied is not None:
            await conn.exec_driver_sql(f"TRUNCATE {emptied} CASCADE")
        await conn.exec_driver_sql("SET LOCAL plan_cache_mode = force_generic_plan")
        await conn.exec_driver_sql(f"PREPARE probe AS {prepared}".replace("%", "%%"))
        args = ", ".join(literal(params[name]) for name in names)
        rows = await conn.exec_driver_sql(f"EXPLAIN EXECUTE probe({args})".replace("%", "%%"))
        plan = "\n".join(str(row[0]) for row in rows)
        await conn.exec_driver_sql("DEALLOCATE probe")
        await conn.rollback()
    return plan


async def literal_plan(db: Database, sql: str, emptied: str | None = None) -> str:
    """EXPLAIN of ``sql`` (its values written in it, no placeholders) in a
    transaction rolled back after, with the ``emptied`` tables truncated
    first as :func:`generic_plan` does (None: none)."""
    async with db.engine.connect() as conn, conn.begin():
        if emptied is not None:
            await conn.exec_driver_sql(f"TRUNCATE {emptied} CASCADE")
        rows = await conn.exec_driver_sql(f"EXPLAIN {sql}".replace("%", "%%"))
        plan = "\n".join(str(row[0]) for row in rows)
        await conn.rollback()
    return plan


async def sqlite_plan(db: Database, statement: Any, **params: Any) -> str:
    """SQLite's EXPLAIN QUERY PLAN of the Core ``statement`` with ``params``
    (its ``IN`` lists expanded)."""
    compiled = statement.compile(
        dialect=db.engine.dialect,
        column_keys=sorted(params),
        compile_kwargs={"render_postcompile": True},
    )
    values = compiled.construct_params(params)
    args = tuple(values[name] for name in compiled.positiontup or ())
    async with db.read() as conn:
        found = await conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {compiled}", args)
        return " ".join(str(row[-1]) for row in found)


def literal(value: Any) -> str:
    """``value`` as an SQL literal of the EXPLAIN EXECUTE arguments."""
    if value is None:
        return "NULL"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, list):
        return "ARRAY[" + ", ".join(str(v) for v in value) + "]::bigint[]"
    return "'" + str(value).replace("'", "''") + "'"
