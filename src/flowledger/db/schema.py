"""The declared schema (SQLAlchemy Core metadata) of the job ledger and the
worker registry. Alembic migrations must produce exactly this (checked by
``tests/integration/test_migrations.py``). Owns table and index definitions
only; no queries live here.
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    CheckConstraint,
    Column,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
    event,
    text,
)
from sqlalchemy.schema import DDL

from flowledger.db import (
    history_partitions,
    job_history_keys,  # noqa: F401  (no history → jobs key on PostgreSQL)
)
from flowledger.db.types import BigId, JsonType, UTCDateTime
from flowledger.states import AttemptStatus, JobStatus

NAMING = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

metadata = MetaData(naming_convention=NAMING)


def in_values(column: str, values: list[str]) -> str:
    """A CHECK constraint text: ``column IN ('a', 'b', …)``."""
    return f"{column} IN ({', '.join(repr(v) for v in values)})"


_PENDING = text("status = 'pending'")
_RUNNING = text("status = 'running'")
_DEAD_OR_FAILED = text("status IN ('dead', 'failed')")
_SETTLED = text("status IN ('succeeded', 'canceled')")

workflow_jobs = Table(
    "workflow_jobs",
    metadata,
    Column("id", BigId, primary_key=True, autoincrement=True),
    Column("type", String(64), nullable=False),
    Column("pool", String(64), nullable=False),
    Column("status", String(16), nullable=False),
    Column("payload", JsonType, nullable=False),
    Column("tenant_id", String(64)),
    Column("instance_id", BigInteger),
    Column("task_id", BigInteger),
    Column("node_key", String(128)),
    Column("priority", Integer, nullable=False),
    Column("run_at", UTCDateTime, nullable=False),
    Column("attempts", Integer, nullable=False),
    Column("max_attempts", Integer, nullable=False),
    Column("generation", Integer, nullable=False),
    Column("lease_token", String(36)),
    Column("lease_owner", String(128)),
    Column("lease_until", UTCDateTime),
    Column("execution_timeout_ms", Integer, nullable=False),
    Column("execution_deadline", UTCDateTime),
    Column("paused_remaining_ms", BigInteger),
    Column("side_effect_at", UTCDateTime),
    Column("operation_key", String(128), nullable=False),
    Column("trace_id", String(64), nullable=False),
    Column("idempotency_key", String(255)),
    Column("result", JsonType),
    Column("last_error", Text),
    Column("last_error_code", String(64)),
    Column("last_error_fingerprint", String(16)),
    Column("cancel_reason", Text),
    Column("replay_batch_id", String(32)),
    Column("created_at", UTCDateTime, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
    CheckConstraint(in_values("status", [s.value for s in JobStatus]), name="status"),
    CheckConstraint("attempts >= 0 AND max_attempts >= 1", name="attempts"),
    UniqueConstraint("idempotency_key"),
    # claim paths (SPEC L-7): priority order and earliest-due order, per pool
    Index(
        "ix_workflow_jobs_claim_priority",
        "pool",
        "priority",
        "run_at",
        "id",
        postgresql_where=_PENDING,
        sqlite_where=_PENDING,
    ),
    # …carrying type and tenant: the engine diagnostics' queue (pending, due,
    # oldest due per pool and type, tenant-scoped) is index-only (0026)
    Index(
        "ix_workflow_jobs_claim_due",
        "pool",
        "run_at",
        "id",
        postgresql_include=["type", "tenant_id"],
        postgresql_where=_PENDING,
        sqlite_where=_PENDING,
    ),
    # drain / stuck detection (SPEC L-20, L-23); the deadline and the id are
    # carried so "lease missing/expired or deadline reached" is an index-only
    # count, and the rescuer's search for those jobs an index-only scan (0024);
    # pool and tenant for the queue's running jobs per pool (0026)
    Index(
        "ix_workflow_jobs_running_lease",
        "lease_until",
        postgresql_include=["execution_deadline", "id", "pool", "tenant_id"],
        postgresql_where=_RUNNING,
        sqlite_where=_RUNNING,
    ),
    # pause / resume / cleanup by instance (SPEC L-18, L-22)
    Index("ix_workflow_jobs_instance", "instance_id", "status"),
    Index("ix_workflow_jobs_trace", "trace_id"),
    Index("ix_workflow_jobs_status_type", "status", "type"),
    # failure clusters (SPEC L-24) and fingerprint filters: dead/failed jobs by
    # error fingerprint, newest first; the included columns make the group-by
    # of every clustering (reason, type, instance, trace), tenant-scoped or not,
    # index-only
    Index(
        "ix_workflow_jobs_failure_clusters",
        "last_error_fingerprint",
        "updated_at",
        "id",
        postgresql_include=["status", "type", "instance_id", "trace_id", "tenant_id"],
        postgresql_where=_DEAD_OR_FAILED,
        sqlite_where=_DEAD_OR_FAILED,
    ),
    # the failure clusters by reason: a group-by (fingerprint, type) read in
    # index order from the narrow entries alone (0027; the wider index above
    # serves the members and the other clusterings)
    Index(
        "ix_workflow_jobs_failure_groups",
        "last_error_fingerprint",
        "type",
        postgresql_include=["status", "updated_at", "tenant_id"],
        postgresql_where=_DEAD_OR_FAILED,
        sqlite_where=_DEAD_OR_FAILED,
    ),
    # the oldest dead / failed jobs first: what a replay takes (0023)
    Index(
        "ix_workflow_jobs_replayable",
        "created_at",
        "id",
        postgresql_where=_DEAD_OR_FAILED,
        sqlite_where=_DEAD_OR_FAILED,
    ),
    # …and the newest members of a job-type cluster
    Index(
        "ix_workflow_jobs_failure_types",
        "type",
        "updated_at",
        "id",
        postgresql_include=["status", "tenant_id"],
        postgresql_where=_DEAD_OR_FAILED,
        sqlite_where=_DEAD_OR_FAILED,
    ),
    # retention (SPEC O-20): settled jobs in the order they expire, so a
    # batch reads only expired jobs and the pass stops at the cut-off
    # instead of walking every newer job (issue 34)
    Index(
        "ix_workflow_jobs_settled",
        "updated_at",
        "id",
        postgresql_where=_SETTLED,
        sqlite_where=_SETTLED,
    ),
    Index(
        "ix_workflow_jobs_replay_batch",
        "replay_batch_id",
        postgresql_where=text("replay_batch_id IS NOT NULL"),
        sqlite_where=text("replay_batch_id IS NOT NULL"),
    ),
)

workflow_job_executions = Table(
    "workflow_job_executions",
    metadata,
    Column("id", BigId, primary_key=True, autoincrement=True),
    Column(
        "job_id", BigInteger, ForeignKey("workflow_jobs.id", ondelete="CASCADE"), nullable=False
    ),
    Column("generation", Integer, nullable=False),
    Column("attempt", Integer, nullable=False),
    Column("status", String(16), nullable=False),
    Column("node_id", String(128)),
    Column("scheduled_at", UTCDateTime, nullable=False),
    Column("started_at", UTCDateTime, nullable=False),
    Column("finished_at", UTCDateTime),
    Column("duration_ms", Integer),
    Column("request", JsonType),
    Column("response", JsonType),
    Column("error", Text),
    Column("error_code", String(64)),
    Column("error_fingerprint", String(16)),
    Column("side_effect_at", UTCDateTime),
    CheckConstraint(in_values("status", [s.value for s in AttemptStatus]), name="status"),
    Index("ix_workflow_job_executions_job", "job_id", "generation", "attempt"),
    Index("ix_workflow_job_executions_started", "started_at"),
    # PostgreSQL: one partition per UTC day of started_at plus DEFAULT, the
    # primary key (id, started_at) (flowledger.db.history_partitions; issue
    # 34 item 1); SQLite: one plain table
    postgresql_partition_by=f"RANGE ({history_partitions.PARTITION_COLUMN})",
)
event.listen(
    workflow_job_executions,
    "after_create",
    DDL(history_partitions.CREATE_DEFAULT_SQL).execute_if(  # type: ignore[no-untyped-call]
        dialect="postgresql"
    ),
)

workflow_job_effects = Table(
    "workflow_job_effects",
    metadata,
    Column("id", BigId, primary_key=True, autoincrement=True),
    Column("operation_key", String(128), nullable=False),
    Column("step_key", String(128), nullable=False),
    Column(
        "job_id", BigInteger, ForeignKey("workflow_jobs.id", ondelete="CASCADE"), nullable=False
    ),
    Column("generation", Integer, nullable=False),
    Column("result", JsonType),
    Column("created_at", UTCDateTime, nullable=False),
    UniqueConstraint("operation_key", "step_key"),
    Index("ix_workflow_job_effects_job", "job_id"),
)

system_scheduler_nodes = Table(
    "system_scheduler_nodes",
    metadata,
    Column("id", String(128), primary_key=True),
    Column("hostname", String(255), nullable=False),
    Column("pid", Integer, nullable=False),
    Column("roles", JsonType, nullable=False),
    Column("pools", JsonType, nullable=False),
    Column("slots_capacity", Integer, nullable=False),
    Column("slots_in_use", Integer, nullable=False),
    Column("status", String(16), nullable=False),
    Column("started_at", UTCDateTime, nullable=False),
    Column("heartbeat_at", UTCDateTime, nullable=False),
    CheckConstraint("status IN ('active', 'stopped')", name="status"),
    Index("ix_system_scheduler_nodes_heartbeat", "heartbeat_at"),
)

system_leader_leases = Table(
    "system_leader_leases",
    metadata,
    Column("name", String(64), primary_key=True),
    Column("holder", String(128), nullable=False),
    Column("lease_until", UTCDateTime, nullable=False),
)

# Paused scopes (issue 31 item 3): while a pool or a job type has a row here,
# claims skip its pending jobs (they stay pending, their run_at unchanged).
workflow_job_pauses = Table(
    "workflow_job_pauses",
    metadata,
    Column("scope", String(16), primary_key=True),
    Column("value", String(64), primary_key=True),
    Column("paused_by", String(128), nullable=False),
    Column("reason", Text, nullable=False),
    Column("since", UTCDateTime, nullable=False),
    CheckConstraint("scope IN ('pool', 'job_type')", name="scope"),
)

# The engine's tables live in their own module but share this metadata.
from flowledger.db import alert_schema as _alert_schema  # noqa: E402,F401
from flowledger.db import analytics_schema as _analytics_schema  # noqa: E402,F401
from flowledger.db import automation_schema as _automation_schema  # noqa: E402,F401
from flowledger.db import batch_schema as _batch_schema  # noqa: E402,F401
from flowledger.db import callback_schema as _callback_schema  # noqa: E402,F401
from flowledger.db import compensation_schema as _compensation_schema  # noqa: E402,F401
from flowledger.db import connector_schema as _connector_schema  # noqa: E402,F401
from flowledger.db import engine_schema as _engine_schema  # noqa: E402,F401
from flowledger.db import event_schema as _event_schema  # noqa: E402,F401
from flowledger.db import health_schema as _health_schema  # noqa: E402,F401
from flowledger.db import migration_schema as _migration_schema  # noqa: E402,F401
from flowledger.db import monitor_schema as _monitor_schema  # noqa: E402,F401
from flowledger.db import retention_schema as _retention_schema  # noqa: E402,F401
from flowledger.db import search_schema as _search_schema  # noqa: E402,F401
from flowledger.db import task_run_schema as _task_run_schema  # noqa: E402,F401
