"""The two dialect-specific pieces of the health inspection's SQL (SPEC
O-16), so that ``ops/`` builds its queries without branching on the dialect
itself: a transaction without PostgreSQL's JIT compiler, and a common table
expression that PostgreSQL computes once (``AS MATERIALIZED``; SQLite has no
such hint and plans the plain CTE)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import CTE, Select, text
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db.dialects import POSTGRESQL, dialect_name


async def without_jit(conn: AsyncConnection) -> None:
    """For the rest of ``conn``'s transaction, PostgreSQL does not JIT-compile
    statements (short index-driven queries whose pessimistic cost estimates
    would otherwise cost far more to compile than to run). No-op on SQLite."""
    if dialect_name(conn) == POSTGRESQL:
        await conn.execute(text("SET LOCAL jit = off"))


def materialized_cte(query: Select[Any], name: str) -> CTE:
    """``query`` as the CTE ``name``, computed once before the statement that
    uses it on PostgreSQL (``AS MATERIALIZED``); a plain CTE on SQLite."""
    return query.cte(name).prefix_with("MATERIALIZED", dialect=POSTGRESQL)
