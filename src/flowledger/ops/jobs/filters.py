"""The one filter over parent jobs shared by the job list, failure clusters,
batch actions and conditional replay (SPEC L-24, L-25), applied to a
SQLAlchemy select of ``workflow_jobs``. Tenant scope (A-3) is part of it:
``tenants=None`` means every tenant (a caller who sees ``*``); otherwise only
jobs of those tenants — jobs without a tenant (system jobs) are then hidden.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import or_, select

from flowledger.db.engine_schema import workflow_instances as instances
from flowledger.db.like import contains
from flowledger.db.schema import workflow_jobs as jobs


@dataclass(frozen=True)
class JobFilter:
    types: tuple[str, ...] | None = None
    statuses: tuple[str, ...] | None = None
    instance_id: int | None = None
    trace_id: str | None = None
    keyword: str | None = None  # case-insensitive substring of the last error or the type
    fingerprint: str | None = None  # one failure cluster
    enqueued_before: datetime | None = None  # 入库时长: created at or before this time
    enqueued_after: datetime | None = None
    replay_batch_id: str | None = None
    tenants: tuple[str, ...] | None = None
    node_key: str | None = None  # the definition node a job belongs to
    definition_key: str | None = None  # jobs of instances of one definition

    def keyword_match(self, last_error: Any, job_type: Any) -> Any:
        """The keyword condition over these columns (of the table or a subquery)."""
        assert self.keyword
        return or_(contains(last_error, self.keyword), contains(job_type, self.keyword))

    def apply(self, query: Any) -> Any:
        if self.types:
            query = query.where(jobs.c.type.in_(self.types))
        if self.statuses:
            query = query.where(jobs.c.status.in_(self.statuses))
        if self.instance_id is not None:
            query = query.where(jobs.c.instance_id == self.instance_id)
        if self.trace_id:
            query = query.where(jobs.c.trace_id == self.trace_id)
        if self.fingerprint:
            query = query.where(jobs.c.last_error_fingerprint == self.fingerprint)
        if self.replay_batch_id:
            query = query.where(jobs.c.replay_batch_id == self.replay_batch_id)
        if self.node_key:
            query = query.where(jobs.c.node_key == self.node_key)
        if self.definition_key:
            # instance ids by ix_workflow_instances_definition, then jobs by
            # ix_workflow_jobs_instance: no per-instance queries
            query = query.where(
                jobs.c.instance_id.in_(
                    select(instances.c.id).where(instances.c.definition_key == self.definition_key)
                )
            )
        if self.enqueued_before is not None:
            query = query.where(jobs.c.created_at <= self.enqueued_before)
        if self.enqueued_after is not None:
            query = query.where(jobs.c.created_at >= self.enqueued_after)
        if self.keyword:  # literal (issue 17 item 7); ix_workflow_jobs_*_trgm on PostgreSQL
            query = query.where(self.keyword_match(jobs.c.last_error, jobs.c.type))
        if self.tenants is not None:
            query = query.where(jobs.c.tenant_id.in_(self.tenants))
        return query
