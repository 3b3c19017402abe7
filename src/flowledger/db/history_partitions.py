"""The PostgreSQL layout of the attempts history, ``workflow_job_executions``
(issue 34 item 1): declaratively partitioned by ``RANGE (started_at)``, one
partition per UTC day (``workflow_job_executions_pYYYYMMDD``) plus a
``DEFAULT`` partition that catches any row no day partition covers (so an
insert never fails when the partition service is behind), and, on a database
migrated from before partitioning, the old table attached as one partition
covering its rows' range (``workflow_job_executions_legacy``).

Owns the names and the DDL text only (pure functions, no I/O): the schema's
``CREATE TABLE`` (:mod:`flowledger.db.schema`), migration 0019 and the
ledger's partition maintenance (:mod:`flowledger.ledger.driver.history_partitions`)
all build their statements here. SQLite keeps the one plain table.

The primary key of a partitioned table must contain the partition column:
on PostgreSQL it is ``(id, started_at)``; ``id`` alone stays unique (one
sequence) but is not a constraint there.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta

from sqlalchemy import PrimaryKeyConstraint
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.compiler import DDLCompiler

PARENT = "workflow_job_executions"
PARTITION_COLUMN = "started_at"
DEFAULT_PARTITION = f"{PARENT}_default"
LEGACY_PARTITION = f"{PARENT}_legacy"
DAY_PREFIX = f"{PARENT}_p"
# how far the clocks of two nodes may disagree (the one that created a job,
# the one that claimed it; a backdated demo job): an attempt starts after its
# job was created and before its job's ``updated_at``, each give or take
# this margin — the bounds that let a read or a retention batch over known
# jobs plan only their day partitions
CLOCK_MARGIN = timedelta(days=1)


def earliest_attempt_start(created_at: datetime) -> datetime:
    """A lower bound on ``started_at`` of any attempt of a job created at
    ``created_at``: a read of the attempts of known jobs adds
    ``started_at >= earliest_attempt_start(min created_at)`` so PostgreSQL
    prunes every older day partition when it plans the statement, instead
    of opening and probing all of them (``job_id`` is not the partition
    key; on the volume bench's 92 partitions the drawer's attempts read
    went from ~30 ms, mostly planning, to under 1 ms)."""
    return created_at - CLOCK_MARGIN


def day_start(day: date) -> datetime:
    """Midnight UTC of ``day``: a day partition's lower bound."""
    return datetime.combine(day, time(0), UTC)


def day_partition(day: date) -> str:
    """The name of ``day``'s partition."""
    return f"{DAY_PREFIX}{day:%Y%m%d}"


def _literal(moment: datetime) -> str:
    return f"'{moment.astimezone(UTC).isoformat()}'"


def bounds_sql(low: datetime, high: datetime) -> str:
    """``FOR VALUES FROM (…) TO (…)``, as timestamptz literals in UTC."""
    return f"FOR VALUES FROM ({_literal(low)}) TO ({_literal(high)})"


def create_day_sql(day: date) -> str:
    """Create ``day``'s partition (when it does not exist)."""
    low = day_start(day)
    return (
        f"CREATE TABLE IF NOT EXISTS {day_partition(day)} PARTITION OF {PARENT} "
        f"{bounds_sql(low, low + timedelta(days=1))}"
    )


CREATE_DEFAULT_SQL = f"CREATE TABLE IF NOT EXISTS {DEFAULT_PARTITION} PARTITION OF {PARENT} DEFAULT"

# every partition with its bounds (NULL for DEFAULT), read from the catalog;
# the bounds' text is parsed by PostgreSQL itself (whatever the session's
# TimeZone), oldest first
PARTITIONS_SQL = f"""
SELECT c.relname AS name,
       (regexp_match(pg_get_expr(c.relpartbound, c.oid), 'FROM \\(''([^'']+)''\\)'))[1]::timestamptz
           AS low,
       (regexp_match(pg_get_expr(c.relpartbound, c.oid), 'TO \\(''([^'']+)''\\)'))[1]::timestamptz
           AS high
FROM pg_inherits AS i
JOIN pg_class AS c ON c.oid = i.inhrelid
WHERE i.inhparent = to_regclass('{PARENT}')
ORDER BY low NULLS LAST, c.relname
"""

IS_PARTITIONED_SQL = (
    f"SELECT EXISTS (SELECT 1 FROM pg_partitioned_table WHERE partrelid = to_regclass('{PARENT}'))"
)


@compiles(PrimaryKeyConstraint, "postgresql")
def _primary_key(element: PrimaryKeyConstraint, compiler: DDLCompiler, **kw: object) -> str:
    """The attempts' primary key on PostgreSQL is ``(id, started_at)``: a
    partitioned table's unique constraints must contain its partition
    column. (SQLite keeps ``id`` alone, its rowid.)"""
    text = compiler.visit_primary_key_constraint(element, **kw)
    table = element.table
    if table is not None and getattr(table, "name", None) == PARENT:
        text = text.replace("PRIMARY KEY (id)", f"PRIMARY KEY (id, {PARTITION_COLUMN})")
    return text
