"""The engine-trace view of an instance's diagnostics (SPEC O-10, E-8): its
trace rows oldest first, keyset-paged by id (an instance with 50,000 rows
answers ``limit`` rows and a ``next`` cursor, never all of them), their total
count, and the job chain of the instance's traceId — every job carrying it
(the instance's own and those of subprocess children sharing the traceId)
with every attempt, payloads and attempts redacted.

Every row carries ``kind``: ``intervention`` for an operator's action on the
instance (issue 31, :mod:`flowledger.engine.interventions`: the row's
``action``, ``actor``, ``reason`` and ``changes`` — before → after — lifted
from its detail), ``engine`` for the rest. ``kind="intervention"`` pages the
interventions alone (the drawer's "interventions only"), counted alike.

Indexes: rows and count by ``ix_workflow_trace_instance (instance_id, id)``;
the chain by ``ix_workflow_jobs_trace``; attempts by
``ix_workflow_job_executions_job``."""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db.engine_schema import workflow_trace as trace
from flowledger.db.schema import workflow_jobs as jobs
from flowledger.engine.interventions import EVENT as INTERVENTION
from flowledger.ops.diagnostics.redaction import redact
from flowledger.ops.jobs.queries import (
    camel_row,
    decode_cursor,
    encode_cursor,
    executions_by_job,
)

DEFAULT_TRACE_LIMIT = 200
MAX_TRACE_LIMIT = 1000
MAX_CHAIN_JOBS = 500

_JOB_HIDDEN = frozenset({"lease_token"})

ENGINE_KIND = "engine"
INTERVENTION_KIND = "intervention"
KINDS = (ENGINE_KIND, INTERVENTION_KIND)


def trace_item(row: Any) -> dict[str, Any]:
    """One trace row as the API shows it: redacted, with its ``kind`` (and
    an intervention's action, actor, reason and changes at the top)."""
    item: dict[str, Any] = redact(camel_row(row))
    if item["event"] != INTERVENTION:
        item["kind"] = ENGINE_KIND
        return item
    detail = item.get("detail") or {}
    item.update(
        kind=INTERVENTION_KIND,
        action=detail.get("action"),
        actor=detail.get("actor"),
        reason=detail.get("reason"),
        changes=detail.get("changes") or [],
    )
    return item


async def trace_page(
    conn: AsyncConnection,
    instance_id: int,
    *,
    limit: int,
    cursor: str | None,
    kind: str | None = None,
) -> dict[str, Any]:
    """One page of trace rows (oldest first) after ``cursor``; only the
    interventions with ``kind="intervention"``, only the rest with ``"engine"``."""
    after = decode_cursor(cursor)
    where = [trace.c.instance_id == instance_id]
    if kind == INTERVENTION_KIND:
        where.append(trace.c.event == INTERVENTION)
    elif kind == ENGINE_KIND:
        where.append(trace.c.event != INTERVENTION)
    query = select(trace).where(*where)
    if after is not None:
        query = query.where(trace.c.id > after)
    rows = (await conn.execute(query.order_by(trace.c.id).limit(limit + 1))).mappings().all()
    items = [trace_item(r) for r in rows[:limit]]
    total = (await conn.execute(select(func.count()).select_from(trace).where(*where))).scalar_one()
    more = len(rows) > limit
    return {
        "items": items,
        "total": int(total),
        "limit": limit,
        "next": encode_cursor(int(items[-1]["id"])) if more else None,
    }


async def jobs_with_attempts(conn: AsyncConnection, query: Any) -> list[dict[str, Any]]:
    """The jobs ``query`` selects (all columns of workflow_jobs), each with
    ``executions``; payloads, results and attempts redacted."""
    rows = (await conn.execute(query)).mappings().all()
    out = [redact(camel_row(r, _JOB_HIDDEN)) for r in rows]
    attempts = await executions_by_job(
        conn,
        [int(j["id"]) for j in out],
        created_since=min((j["createdAt"] for j in out), default=None),
    )
    for job in out:
        job["executions"] = [redact(a) for a in attempts[int(job["id"])]]
    return out


async def job_chain(conn: AsyncConnection, trace_id: str) -> dict[str, Any]:
    """Every job of ``trace_id`` oldest first (at most 500, then ``truncated``)."""
    chain = await jobs_with_attempts(
        conn,
        select(jobs)
        .where(jobs.c.trace_id == trace_id)
        .order_by(jobs.c.id)
        .limit(MAX_CHAIN_JOBS + 1),
    )
    return {
        "traceId": trace_id,
        "jobs": chain[:MAX_CHAIN_JOBS],
        "truncated": len(chain) > MAX_CHAIN_JOBS,
    }


async def trace_view(
    conn: AsyncConnection,
    instance: dict[str, Any],
    *,
    limit: int = DEFAULT_TRACE_LIMIT,
    cursor: str | None = None,
    kind: str | None = None,
) -> dict[str, Any]:
    page = await trace_page(conn, int(instance["id"]), limit=limit, cursor=cursor, kind=kind)
    page["jobChain"] = await job_chain(conn, str(instance["trace_id"]))
    return page
