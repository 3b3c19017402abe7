"""Analytics of asynchronous work (SPEC O-14 async health): the job ledger's
status distribution per job type, webhook deliveries (subscription hits) per
status and subprocess child instances per status — current totals, within an
:class:`~flowledger.ops.analytics.sql.AnalyticsScope`. With a definition
filter, jobs and deliveries count when their instance is of that definition,
and child instances when their *parent* is (the children a flow launched).
A status whose exact count would read millions of rows is the planner's
estimate, named in ``estimatedStatuses`` (:mod:`flowledger.db.count_estimates`,
issue 34 item 3).

Indexes (PostgreSQL): job counts over ``ix_workflow_jobs_status_type``
(tenant-scoped: a filter on the heap rows it finds), with a definition filter
through ``ix_workflow_instances_definition`` and ``ix_workflow_jobs_instance``;
deliveries over ``workflow_subscription_hits`` (``…_instance`` with a
definition filter); children over ``ix_workflow_instances_parent``.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import aliased
from sqlalchemy.sql.elements import ColumnElement

from flowledger.db.count_estimates import GroupCounts, counts_by
from flowledger.db.database import Database
from flowledger.db.engine_schema import workflow_instances as instances
from flowledger.db.event_schema import HIT_STATUSES
from flowledger.db.event_schema import workflow_subscription_hits as hits
from flowledger.db.schema import workflow_jobs as jobs
from flowledger.ops.analytics.sql import AnalyticsScope, analytics_read
from flowledger.ops.jobs.queries import type_status_counts
from flowledger.states import InstanceStatus


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
        job_counts = await type_status_counts(
            conn, select(jobs.c.id).select_from(job_from).where(*job_where)
        )
        hit_rows = select(hits.c.id).select_from(hit_from).where(*hit_where)
        deliveries = await counts_by(conn, hit_rows, hits.c.status, HIT_STATUSES)
        children = await counts_by(
            conn,
            select(instances.c.id).select_from(child_from).where(*child_where),
            instances.c.status,
            [s.value for s in InstanceStatus],
        )
    return {
        "definitionKey": definition,
        "jobs": [
            {
                "type": t,
                "total": sum(counts.values()),
                "byStatus": counts,
                "estimatedStatuses": sorted(job_counts.estimated_by_type.get(t, ())),
            }
            for t, counts in job_counts.by_type.items()
        ],
        "webhookDeliveries": _figures(deliveries),
        "subprocessInstances": _figures(children),
    }


def _figures(counts: GroupCounts) -> dict[str, Any]:
    return {
        "total": counts.total,
        "byStatus": counts.counts,
        "estimatedStatuses": sorted(counts.estimated),
    }
