"""The diagnostic bundle of one instance (SPEC O-7): one JSON document to
attach to a ticket — the diagnostics document (every view, SPEC O-10, with
up to :data:`BUNDLE_TRACE_ROWS` trace rows), the instance's jobs with every
attempt, its audit rows (the instance's and its tasks'), its interventions
(every one, oldest first: issue 31, also among the trace rows) and the
versions of flowledger and the schema. Secrets are redacted
(:mod:`flowledger.ops.redaction`).

:func:`instance_bundle_part` is the per-instance part; the job-chain bundle
of SPEC L-25 (:func:`flowledger.ops.job_queries.chain_bundle`) includes it
for each related instance through this same function.

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
from flowledger.db.engine_schema import workflow_tasks
from flowledger.db.migrate import current_revision, head_revision
from flowledger.db.schema import workflow_jobs as jobs
from flowledger.ops.instance_diagnostics import instance_diagnostics
from flowledger.ops.instance_diagnostics_trace import (
    INTERVENTION_KIND,
    jobs_with_attempts,
    trace_page,
)
from flowledger.ops.job_queries import camel_row
from flowledger.ops.redaction import redact

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
