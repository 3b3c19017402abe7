"""The diagnostic bundle of one instance (SPEC O-7): one JSON document to
attach to a ticket — the diagnostics document (every view, SPEC O-10, with
up to :data:`BUNDLE_TRACE_ROWS` trace rows), the instance's jobs with every
attempt, its audit rows (the instance's and its tasks'), its interventions
(every one, oldest first: issue 31, also among the trace rows) and the
versions of flowledger and the schema. Secrets are redacted
(:mod:`flowledger.ops.diagnostics.redaction`).

:func:`instance_bundle_part` is the per-instance part; the job-chain bundle
of SPEC L-25 (:func:`chain_bundle`: the chain of
:func:`flowledger.ops.jobs.queries.read_chain` and a snapshot of each related
instance) includes it for each related instance through this same function.

Indexes: jobs by ``ix_workflow_jobs_instance``; audit rows by
``ix_operation_audit_target (target_type, target_id)``."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import and_, or_, select
from sqlalchemy.ext.asyncio import AsyncConnection

import flowledger
from flowledger.db.database import Database
from flowledger.db.engine_schema import operation_audit as audit
from flowledger.db.engine_schema import workflow_tasks, workflow_trace
from flowledger.db.migrate import current_revision, head_revision
from flowledger.db.schema import workflow_jobs as jobs
from flowledger.engine import queries as engine_queries
from flowledger.ops.diagnostics.instance import instance_diagnostics
from flowledger.ops.diagnostics.redaction import redact
from flowledger.ops.diagnostics.trace import (
    INTERVENTION_KIND,
    jobs_with_attempts,
    trace_page,
)
from flowledger.ops.jobs.queries import camel_row, read_chain

BUNDLE_TRACE_ROWS = 5000
KIND = "flowledger.instance-diagnostic-bundle"


async def _audit_rows(conn: AsyncConnection, instance_id: int) -> list[dict[str, Any]]:
    task_ids = [
        str(t)
        for t in (
            await conn.execute(
                select(workflow_tasks.c.id).where(workflow_tasks.c.instance_id == instance_id)
            )
        ).scalars()
    ]
    where = and_(audit.c.target_type == "instance", audit.c.target_id == str(instance_id))
    if task_ids:
        where = or_(where, and_(audit.c.target_type == "task", audit.c.target_id.in_(task_ids)))
    rows = (await conn.execute(select(audit).where(where).order_by(audit.c.id))).mappings()
    return [redact(camel_row(r)) for r in rows]


async def instance_bundle_part(
    conn: AsyncConnection, instance_id: int, *, tenants: Sequence[str] | None, now: datetime
) -> dict[str, Any]:
    """The per-instance part: ``diagnostics``, ``jobs`` (with ``executions``),
    ``audit`` and ``interventions``. InstanceNotFound outside ``tenants``."""
    diagnostics = await instance_diagnostics(
        conn, instance_id, tenants=tenants, now=now, trace_limit=BUNDLE_TRACE_ROWS
    )
    instance_jobs = await jobs_with_attempts(
        conn, select(jobs).where(jobs.c.instance_id == instance_id).order_by(jobs.c.id)
    )
    interventions = await trace_page(
        conn, instance_id, limit=BUNDLE_TRACE_ROWS, cursor=None, kind=INTERVENTION_KIND
    )
    return {
        "diagnostics": diagnostics,
        "jobs": instance_jobs,
        "audit": await _audit_rows(conn, instance_id),
        "interventions": interventions["items"],
    }


async def versions(db: Database) -> dict[str, Any]:
    return {
        "flowledger": flowledger.__version__,
        "schemaRevision": await current_revision(db),
        "schemaHead": head_revision(),
        "database": db.dialect,
    }


async def instance_bundle(
    db: Database, instance_id: int, *, tenants: Sequence[str] | None, now: datetime
) -> dict[str, Any]:
    """The whole downloadable bundle of ``instance_id``."""
    async with db.read() as conn:
        part = await instance_bundle_part(conn, instance_id, tenants=tenants, now=now)
    return {
        "kind": KIND,
        "version": 1,
        "generatedAt": now,
        "instanceId": instance_id,
        "versions": await versions(db),
        **part,
    }


def _instance_snapshot(detail: dict[str, Any]) -> dict[str, Any]:
    out = camel_row(
        {k: v for k, v in detail.items() if k not in ("tasks", "tokens", "comments", "trace")}
    )
    for part in ("tasks", "tokens", "comments", "trace"):
        out[part] = [camel_row(r) for r in detail[part]]
    return out


async def chain_bundle(
    db: Database, trace_id: str, *, tenants: tuple[str, ...] | None, now: datetime | None = None
) -> dict[str, Any]:
    """The diagnostic bundle of a chain (SPEC L-25): the chain and its attempts
    plus a snapshot of each related instance — the instances of its jobs and
    those whose engine trace carries the traceId — with their tasks, tokens,
    comments and trace events, and the per-instance part of the instance
    bundle (SPEC O-7: ``diagnostics``, ``jobs``, ``audit``; one function,
    :func:`flowledger.ops.diagnostics.bundle.instance_bundle_part`). Instances
    outside ``tenants`` are left out."""
    async with db.read() as conn:
        chain = await read_chain(conn, trace_id, tenants)
        traced = await conn.execute(
            select(workflow_trace.c.instance_id)
            .where(workflow_trace.c.trace_id == trace_id)
            .distinct()
        )
        related = sorted(set(chain["instanceIds"]) | {int(i) for i in traced.scalars()})
        scope = None if tenants is None else list(tenants)
        instances = []
        for instance_id in related:
            detail = await engine_queries.instance_detail(conn, instance_id, tenants=scope)
            if detail is not None:
                # the same per-instance part as the instance bundle (SPEC O-7)
                part = await instance_bundle_part(
                    conn, instance_id, tenants=scope, now=now or await db.now()
                )
                instances.append({**_instance_snapshot(detail), **part})
    return {
        "kind": "flowledger.chain-diagnostic-bundle",
        "version": 1,
        "generatedAt": now or await db.now(),
        **chain,
        "instances": instances,
    }
