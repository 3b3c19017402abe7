"""Migrations (SPEC L-1, L-21): Alembic's upgrade on a fresh database of each
backend produces exactly the declared schema (``flowledger.db.schema``), and
the database reports the head revision afterwards."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect

from flowledger.db.database import Database
from flowledger.db.job_history_keys import HISTORY_TABLES, SQLITE_ONLY_KEYS
from flowledger.db.migrate import current_revision, head_revision, upgrade
from flowledger.db.schema import metadata


@pytest.fixture
async def fresh(empty_db_url: str) -> AsyncIterator[Database]:
    """A Database on an empty database (unlike ``db``, no schema)."""
    database = Database(empty_db_url)
    try:
        yield database
    finally:
        await database.dispose()


def _partitions(sync_conn: Any) -> set[str]:
    """The partitions of partitioned tables (PostgreSQL's attempts history,
    issue 34): tables of the database, not of the declared schema."""
    if sync_conn.dialect.name != "postgresql":
        return set()
    found = sync_conn.exec_driver_sql(
        "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid"
    )
    return {str(name) for name in found.scalars()}


def _diff(sync_conn: Any) -> list[Any]:
    partitions = _partitions(sync_conn)
    # declared for both backends, created on SQLite only (issue 34):
    # test_the_history_keys_to_jobs_exist_on_sqlite_only checks them
    sqlite_only = SQLITE_ONLY_KEYS if sync_conn.dialect.name == "postgresql" else frozenset()

    def include(obj: Any, name: str | None, type_: str, reflected: bool, compare_to: Any) -> bool:
        if type_ == "foreign_key_constraint" and name in sqlite_only:
            return False
        return not (type_ == "table" and name in partitions)

    context = MigrationContext.configure(
        sync_conn,
        opts={"compare_type": True, "compare_server_default": True, "include_object": include},
    )
    return list(compare_metadata(context, metadata))


def _tables(sync_conn: Any) -> set[str]:
    return set(inspect(sync_conn).get_table_names()) - _partitions(sync_conn)


async def test_fresh_database_has_no_revision_L1(fresh: Database) -> None:
    assert await current_revision(fresh) is None
    async with fresh.engine.connect() as conn:
        assert await conn.run_sync(_tables) == set()


async def test_upgrade_produces_declared_schema_L1(fresh: Database) -> None:
    await upgrade(fresh)
    async with fresh.engine.connect() as conn:
        assert await conn.run_sync(_tables) == set(metadata.tables) | {"alembic_version"}
        assert await conn.run_sync(_diff) == []


async def test_upgrade_reaches_head_and_is_idempotent_L1(fresh: Database) -> None:
    head = head_revision()
    assert head is not None
    await upgrade(fresh)
    assert await current_revision(fresh) == head
    await upgrade(fresh)  # a second run is a no-op
    assert await current_revision(fresh) == head
    async with fresh.engine.connect() as conn:
        assert await conn.run_sync(_diff) == []


async def test_the_last_error_trigram_index_covers_only_jobs_with_an_error_L24(
    fresh: Database, db: Database
) -> None:
    """Migration 0015 and the declared schema agree (alembic's comparison
    skips expression indexes): on PostgreSQL the keyword filter's
    ``last_error`` index is partial, so a job that never failed writes no
    entry into it on insert, claim or settlement (issue 15); SQLite has no
    trigram index at all."""
    await upgrade(fresh)
    for database in (fresh, db):  # migrated; created from the declared schema
        async with database.engine.connect() as conn:
            if database.is_sqlite:
                names = await conn.run_sync(
                    lambda c: {i["name"] for i in inspect(c).get_indexes("workflow_jobs")}
                )
                assert "ix_workflow_jobs_last_error_trgm" not in names
                continue
            found = await conn.exec_driver_sql(
                "SELECT indexdef FROM pg_indexes "
                "WHERE indexname = 'ix_workflow_jobs_last_error_trgm'"
            )
            [definition] = found.scalars().all()
            assert definition.endswith("WHERE (last_error IS NOT NULL)"), definition


async def test_the_history_keys_to_jobs_exist_on_sqlite_only(fresh: Database, db: Database) -> None:
    """Migration 0021 and the declared schema agree: on PostgreSQL neither
    the attempts (nor any of their partitions) nor the receipts have a
    foreign key to ``workflow_jobs`` — a deleted job fires no cascade over
    every day partition (issue 34) — while SQLite keeps both keys."""
    await upgrade(fresh)
    for database in (fresh, db):  # migrated; created from the declared schema
        async with database.engine.connect() as conn:
            if database.is_sqlite:
                keys = await conn.run_sync(
                    lambda c: {
                        (table, fk["name"], fk["referred_table"])
                        for table in HISTORY_TABLES
                        for fk in inspect(c).get_foreign_keys(table)
                    }
                )
                assert {(t, r) for t, _, r in keys} == {
                    (t, "workflow_jobs") for t in HISTORY_TABLES
                }
                continue
            found = await conn.exec_driver_sql(
                "SELECT conrelid::regclass::text FROM pg_constraint "
                "WHERE contype = 'f' AND confrelid = 'workflow_jobs'::regclass"
            )
            assert found.scalars().all() == []


async def test_the_running_lease_index_serves_the_rescuer_and_the_jobs_table_is_vacuumed_often(
    fresh: Database, db: Database
) -> None:
    """Migrations 0024 and 0026 and the declared schema agree (issue 34 items
    3 and 4): on PostgreSQL the running jobs' index carries ``id`` (the
    rescuer's search for expired leases is index-only) and pool and tenant
    (the queue's running jobs per pool), the pending jobs' ``claim_due``
    type and tenant (the queue's pending figures per pool and type), and
    ``workflow_jobs`` has its own autovacuum thresholds; SQLite is unchanged."""
    await upgrade(fresh)
    for database in (fresh, db):  # migrated; created from the declared schema
        if database.is_sqlite:
            continue
        async with database.engine.connect() as conn:
            found = await conn.exec_driver_sql(
                "SELECT indexname, indexdef FROM pg_indexes WHERE indexname IN"
                " ('ix_workflow_jobs_running_lease', 'ix_workflow_jobs_claim_due')"
            )
            defs = dict(found.all())
            assert (
                "INCLUDE (execution_deadline, id, pool, tenant_id)"
                in defs["ix_workflow_jobs_running_lease"]
            )
            assert "INCLUDE (type, tenant_id)" in defs["ix_workflow_jobs_claim_due"]
    if fresh.is_sqlite:
        return
    async with fresh.engine.connect() as conn:
        options = await conn.exec_driver_sql(
            "SELECT reloptions FROM pg_class WHERE relname = 'workflow_jobs'"
        )
        assert "autovacuum_vacuum_scale_factor=0.01" in options.scalar_one()
