"""Analytics of asynchronous work (SPEC O-14 async health): the job ledger's
status distribution per job type, webhook deliveries (subscription hits) per
status and subprocess child instances per status — current totals, within an
:class:`~flowledger.ops.analytics.sql.AnalyticsScope`. With a definition
filter, jobs and deliveries count when their instance is of that definition,
and child instances when their *parent* is (the children a flow launched).

Indexes (PostgreSQL): job counts over ``ix_workflow_jobs_status_type``
(tenant-scoped: a filter on the heap rows it finds), with a definition filter
through ``ix_workflow_instances_definition`` and ``ix_workflow_jobs_instance``;
deliveries over ``workflow_subscription_hits`` (``…_instance`` with a
definition filter); children over ``ix_workflow_instances_parent``.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import aliased
from sqlalchemy.sql.elements import ColumnElement

from flowledger.db.database import Database
from flowledger.db.engine_schema import workflow_instances as instances
from flowledger.db.event_schema import HIT_STATUSES
from flowledger.db.event_schema import workflow_subscription_hits as hits
from flowledger.db.schema import workflow_jobs as jobs
from flowledger.ops.analytics.sql import AnalyticsScope, analytics_read
from flowledger.states import InstanceStatus, JobStatus


async def async_health(db: Database, scope: AnalyticsScope) -> dict[str, Any]:
    definition = scope.definition_key
    job_from: Any = jobs
    job_where = scope.tenant_filter(jobs.c.tenant_id)
    hit_from: Any = hits
    hit_where = scope.tenant_filter(hits.c.tenant_id)
    if definition is not None:
        job_from = jobs.join(instances, instances.c.id == jobs.c.instance_id)
        job_where.append(instances.c.definition_key == definition)
        hit_from = hits.join(instances, instances.c.id == hits.c.instance_id)
        hit_where.append(instances.c.definition_key == definition)
    parent = aliased(instances)
    child_from = instances.join(parent, parent.c.id == instances.c.parent_instance_id)
    child_where: list[ColumnElement[bool]] = [instances.c.parent_instance_id.is_not(None)]
    child_where += scope.tenant_filter(instances.c.tenant_id)
    if definition is not None:
        child_where.append(parent.c.definition_key == definition)
    async with analytics_read(db) as conn:
        job_rows = await conn.execute(
            select(jobs.c.type, jobs.c.status, func.count())
            .select_from(job_from)
            .where(*job_where)
            .group_by(jobs.c.type, jobs.c.status)
        )
        by_type: dict[str, dict[str, int]] = {}
        for type_, status, count in job_rows:
            by_type.setdefault(type_, {s.value: 0 for s in JobStatus})[status] = int(count)
        hit_rows = await conn.execute(
            select(hits.c.status, func.count())
            .select_from(hit_from)
            .where(*hit_where)
            .group_by(hits.c.status)
        )
        deliveries = {s: 0 for s in HIT_STATUSES}
        deliveries.update({status: int(count) for status, count in hit_rows})
        child_rows = await conn.execute(
            select(instances.c.status, func.count())
            .select_from(child_from)
            .where(*child_where)
            .group_by(instances.c.status)
        )
        children = {s.value: 0 for s in InstanceStatus}
        children.update({status: int(count) for status, count in child_rows})
    return {
        "definitionKey": definition,
        "jobs": [
            {"type": t, "total": sum(counts.values()), "byStatus": counts}
            for t, counts in sorted(by_type.items())
        ],
        "webhookDeliveries": {"total": sum(deliveries.values()), "byStatus": deliveries},
        "subprocessInstances": {"total": sum(children.values()), "byStatus": children},
    }
