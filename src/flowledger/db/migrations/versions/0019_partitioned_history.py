"""Partitioned attempts history on PostgreSQL (issue 34 item 1):
``workflow_job_executions`` becomes a table partitioned by ``RANGE
(started_at)`` — one partition per UTC day, a ``DEFAULT`` partition — with
the primary key ``(id, started_at)``. SQLite is unchanged.

An existing table is not copied: it is renamed ``…_legacy``, its primary
key widened to ``(id, started_at)`` (one index build), and ATTACHed to the
new parent as the partition covering its rows' days (one validating scan,
no row rewritten); its other indexes, its CHECK and its foreign key are
adopted by the parent's as they are. An empty table is simply dropped. The
day partitions from the end of that range up to three days ahead are
created here; the worker's ``history-partitions`` service keeps creating
them ahead from then on (``FLOWLEDGER_PARTITION_AHEAD_DAYS``). The
sequence of ``id`` is kept (owned by the new parent), so ids go on.

Downgrade copies every row back into one plain table.

Revision ID: 0019
Revises: 0018
Create Date: 2026-12-06 20:20:00
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from alembic import op

from flowledger.db.history_partitions import (
    CREATE_DEFAULT_SQL,
    LEGACY_PARTITION,
    PARENT,
    bounds_sql,
    create_day_sql,
    day_start,
)

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None

AHEAD_DAYS = 3
_FK = "fk_workflow_job_executions_job_id_workflow_jobs"
_INDEXES = {
    "ix_workflow_job_executions_job": "job_id, generation, attempt",
    "ix_workflow_job_executions_started": "started_at",
}


def _parent_keys() -> None:
    op.execute(f"ALTER TABLE {PARENT} ADD CONSTRAINT pk_{PARENT} PRIMARY KEY (id, started_at)")
    op.execute(
        f"ALTER TABLE {PARENT} ADD CONSTRAINT {_FK} FOREIGN KEY (job_id) "
        "REFERENCES workflow_jobs (id) ON DELETE CASCADE"
    )
    for name, columns in _INDEXES.items():
        op.execute(f"CREATE INDEX {name} ON {PARENT} ({columns})")
    op.execute(f"ALTER SEQUENCE {PARENT}_id_seq OWNED BY {PARENT}.id")


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute(f"LOCK TABLE {PARENT} IN ACCESS EXCLUSIVE MODE")
    op.execute(f"ALTER TABLE {PARENT} RENAME TO {LEGACY_PARTITION}")
    op.execute(f"ALTER TABLE {LEGACY_PARTITION} DROP CONSTRAINT pk_{PARENT}")
    for name in _INDEXES:
        op.execute(f"ALTER INDEX {name} RENAME TO {name.replace(PARENT, LEGACY_PARTITION)}")
    op.execute(
        f"CREATE TABLE {PARENT} (LIKE {LEGACY_PARTITION} INCLUDING DEFAULTS INCLUDING CONSTRAINTS)"
        " PARTITION BY RANGE (started_at)"
    )
    _parent_keys()
    low, high = (
        op.get_bind()
        .exec_driver_sql(f"SELECT min(started_at), max(started_at) FROM {LEGACY_PARTITION}")
        .one()
    )
    today = datetime.now(UTC).date()
    first_day = today
    if low is None:
        op.execute(f"DROP TABLE {LEGACY_PARTITION}")
    else:
        last_day = max(high.astimezone(UTC).date() + timedelta(days=1), today)
        op.execute(
            f"ALTER TABLE {LEGACY_PARTITION} ADD CONSTRAINT pk_{LEGACY_PARTITION} "
            "PRIMARY KEY (id, started_at)"
        )
        op.execute(
            f"ALTER TABLE {PARENT} ATTACH PARTITION {LEGACY_PARTITION} "
            + bounds_sql(day_start(low.astimezone(UTC).date()), day_start(last_day))
        )
        first_day = last_day
    op.execute(CREATE_DEFAULT_SQL)
    day = first_day
    while day <= today + timedelta(days=AHEAD_DAYS):
        op.execute(create_day_sql(day))
        day += timedelta(days=1)


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    plain = f"{PARENT}_plain"
    op.execute(f"CREATE TABLE {plain} (LIKE {PARENT} INCLUDING DEFAULTS INCLUDING CONSTRAINTS)")
    op.execute(f"INSERT INTO {plain} SELECT * FROM {PARENT}")
    op.execute(f"ALTER SEQUENCE {PARENT}_id_seq OWNED BY {plain}.id")
    op.execute(f"DROP TABLE {PARENT}")
    op.execute(f"ALTER TABLE {plain} RENAME TO {PARENT}")
    op.execute(f"ALTER TABLE {PARENT} ADD CONSTRAINT pk_{PARENT} PRIMARY KEY (id)")
    op.execute(
        f"ALTER TABLE {PARENT} ADD CONSTRAINT {_FK} FOREIGN KEY (job_id) "
        "REFERENCES workflow_jobs (id) ON DELETE CASCADE"
    )
    for name, columns in _INDEXES.items():
        op.execute(f"CREATE INDEX {name} ON {PARENT} ({columns})")
