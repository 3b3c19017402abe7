"""Statements sent past SQLAlchemy's execution layer (db/pg_direct.py, issue
15 item 2) give what SQLAlchemy gives: the same rows, keys, types (aware UTC
timestamps, decoded JSON), row counts, errors and transaction boundaries.

Each case runs on both backends through ``Database.begin()``: on PostgreSQL
the statement must have gone directly (seen by ``pg_direct.OBSERVERS``) and
its result is compared with the same statement run through SQLAlchemy's own
``AsyncConnection.execute`` on the same connection; on SQLite (which never
takes the direct path) the same expectations hold through SQLAlchemy."""

from __future__ import annotations

import asyncio
import gc
import logging
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import psycopg
import pytest
from sqlalchemy import bindparam, exc, insert, select, text, update
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db import pg_direct
from flowledger.db.database import Database
from flowledger.db.engine_schema import workflow_definitions, workflow_instances, workflow_tokens

NOW = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)


@pytest.fixture
def sent(db: Database) -> Iterator[list[str]]:
    """The SQL texts sent directly while the test runs (every statement
    object from its first use on)."""
    seen: list[str] = []

    def observe(_conn: Any, sql: str) -> None:
        seen.append(sql)

    if db.is_sqlite:
        yield seen
        return
    assert isinstance(db.engine, pg_direct.DirectEngine)
    db.engine.observers.append(observe)
    db.engine.plan_first_use = True  # these tests use each statement once: send it directly
    try:
        yield seen
    finally:
        db.engine.observers.remove(observe)
        db.engine.plan_first_use = False


async def _seed(conn: AsyncConnection) -> int:
    definition_id = (
        await conn.execute(
            insert(workflow_definitions)
            .values(
                tenant_id="t",
                key="d",
                version=1,
                name="D",
                source={"key": "d"},
                deployed_by="t",
                deployed_at=NOW,
            )
            .returning(workflow_definitions.c.id)
        )
    ).scalar_one()
    for i in range(3):
        await conn.execute(
            insert(workflow_instances).values(
                tenant_id="t",
                trace_id=f"trace-{i}",
                snapshot={"nodes": []},
                definition_id=definition_id,
                definition_key="d",
                definition_version=1,
                status="running",
                form_data={"amount": i, "note": "ü"},
                initiator=f"u{i}",
                created_at=NOW + timedelta(minutes=i),
                updated_at=NOW,
            )
        )
    return int(definition_id)


async def _both(
    db: Database, conn: AsyncConnection, sent: list[str], statement: Any, params: Any = None
) -> Any:
    """Run ``statement`` as the application does; on PostgreSQL check that it
    went directly and that SQLAlchemy's own path returns the same rows."""
    before = len(sent)
    result = await conn.execute(statement, params)
    rows = result.all() if result.returns_rows else None
    if not db.is_sqlite:
        assert len(sent) == before + 1, "the statement did not take the direct path"
        reference = await AsyncConnection.execute(conn, statement, params)
        expected = reference.all() if reference.returns_rows else None
        assert rows == expected
        if rows:
            assert list(rows[0]._mapping) == list(expected[0]._mapping)  # type: ignore[index]
            assert [type(v) for v in rows[0]] == [type(v) for v in expected[0]]  # type: ignore[index]
    return rows, result


async def test_selects_give_sqlalchemys_rows_types_and_keys(db: Database, sent: list[str]) -> None:
    async with db.begin() as conn:
        definition_id = await _seed(conn)
        if not db.is_sqlite:  # psycopg then returns +08:00 values: the type must make them UTC
            await conn.exec_driver_sql("SET LOCAL TIME ZONE 'Asia/Shanghai'")
        rows, _ = await _both(
            db,
            conn,
            sent,
            select(
                workflow_instances.c.id,
                workflow_instances.c.created_at,
                workflow_instances.c.form_data,
                workflow_definitions.c.id,
            )
            .join(
                workflow_definitions,
                workflow_definitions.c.id == workflow_instances.c.definition_id,
            )
            .where(workflow_instances.c.initiator != "u1")
            .order_by(workflow_instances.c.id),
        )
    assert [r.form_data["amount"] for r in rows] == [0, 2]
    assert rows[0].form_data["note"] == "ü"
    assert rows[1].created_at == NOW + timedelta(minutes=2)
    assert rows[1].created_at.tzinfo == UTC  # aware UTC, as UTCDateTime promises
    assert rows[0]._mapping[workflow_instances.c.form_data] == rows[0].form_data
    # both ids keyed: the instance's as "id", the definition's deduplicated as "id_1"
    assert [r.id_1 for r in rows] == [definition_id, definition_id]
    assert rows[0]._mapping[workflow_definitions.c.id] == definition_id


async def test_in_lists_of_any_length(db: Database, sent: list[str]) -> None:
    query = (
        select(workflow_instances.c.initiator)
        .where(workflow_instances.c.initiator.in_(bindparam("who", expanding=True)))
        .order_by(workflow_instances.c.initiator)
    )
    async with db.begin() as conn:
        await _seed(conn)
        cases = (
            (["u0", "u2"], ["u0", "u2"]),
            (["u1"], ["u1"]),
            ([], []),
            (("u2", "u1"), ["u1", "u2"]),  # a length seen before: its expansion reused
            (["u0"], ["u0"]),
            (["nobody", "u0", "u1"], ["u0", "u1"]),
        )
        for who, expected in cases:
            rows, _ = await _both(db, conn, sent, query, {"who": who})
            assert [r.initiator for r in rows] == expected
        rows, _ = await _both(
            db,
            conn,
            sent,
            select(workflow_instances.c.id).where(workflow_instances.c.id.in_([1, 2])),
        )
        assert sorted(r.id for r in rows) == [1, 2]


async def test_writes_returning_and_row_counts(db: Database, sent: list[str]) -> None:
    async with db.begin() as conn:
        await _seed(conn)
        result = await conn.execute(
            update(workflow_instances)
            .where(workflow_instances.c.initiator == bindparam("who"))
            .values(form_data={"amount": 9}, updated_at=NOW + timedelta(hours=1))
            .returning(workflow_instances.c.form_data, workflow_instances.c.updated_at),
            {"who": "u1"},
        )
        row = result.one()
        assert row.form_data == {"amount": 9} and row.updated_at == NOW + timedelta(hours=1)
        plain = await conn.execute(
            update(workflow_instances)
            .where(workflow_instances.c.status == "running")
            .values(status="running")
        )
        assert plain.rowcount == 3 and plain.returns_rows is False
        token_ids = (
            (
                await conn.execute(
                    insert(workflow_tokens).returning(workflow_tokens.c.id),
                    [
                        {
                            "instance_id": 1,
                            "node_key": "a",
                            "state": "active",
                            "fork_stack": [1, 2],
                            "created_at": NOW,
                        }
                    ],
                )
            )
            .scalars()
            .all()
        )
        assert len(token_ids) == 1
        stack = (
            await conn.execute(
                select(workflow_tokens.c.fork_stack).where(workflow_tokens.c.id == token_ids[0])
            )
        ).scalar_one()
        assert stack == [1, 2]
    if not db.is_sqlite:
        assert any(sql.startswith("INSERT INTO workflow_tokens") for sql in sent)
        assert any(sql.startswith("UPDATE workflow_instances") for sql in sent)


async def test_text_and_driver_sql(db: Database, sent: list[str]) -> None:
    async with db.begin() as conn:
        await _seed(conn)
        rows, _ = await _both(
            db,
            conn,
            sent,
            text("SELECT initiator AS who FROM workflow_instances WHERE id = :id"),
            {"id": 2},
        )
        assert rows[0].who == "u1"
        if not db.is_sqlite:
            before = len(sent)
            result = await conn.exec_driver_sql(
                "SELECT initiator FROM workflow_instances WHERE id = %(id)s", {"id": 3}
            )
            assert result.scalar_one() == "u2" and len(sent) == before + 1


async def test_errors_are_sqlalchemys_and_a_savepoint_recovers(
    db: Database, sent: list[str]
) -> None:
    async with db.begin() as conn:
        definition_id = await _seed(conn)
        duplicate = (
            insert(workflow_definitions)
            .values(
                tenant_id="t",
                key="d",
                version=1,
                name="again",
                source={},
                deployed_by="t",
                deployed_at=NOW,
            )
            .returning(workflow_definitions.c.id)
        )
        savepoint = await conn.begin_nested()
        with pytest.raises(exc.IntegrityError) as raised:
            await conn.execute(duplicate)
        await savepoint.rollback()
        assert "unique" in str(raised.value.orig).lower()
        with pytest.raises(exc.StatementError) as refused:
            await conn.execute(
                update(workflow_instances).values(updated_at=datetime(2026, 1, 1))  # naive
            )
        assert isinstance(refused.value.orig, ValueError)
        count = (
            await conn.execute(
                select(workflow_definitions.c.id).where(workflow_definitions.c.id == definition_id)
            )
        ).all()
        assert len(count) == 1


async def test_commit_and_rollback_end_direct_writes(db: Database, sent: list[str]) -> None:
    async with db.begin() as conn:
        await _seed(conn)
    with pytest.raises(RuntimeError):
        async with db.begin() as conn:
            await conn.execute(update(workflow_instances).values(status="canceled"))
            raise RuntimeError("abort")
    async with db.begin() as conn:
        await conn.execute(
            update(workflow_instances)
            .where(workflow_instances.c.id == 1)
            .values(updated_at=datetime(2026, 12, 4, 9, tzinfo=timezone(timedelta(hours=8))))
        )
    async with db.read() as conn:
        rows = (
            await conn.execute(
                select(workflow_instances.c.status, workflow_instances.c.updated_at).order_by(
                    workflow_instances.c.id
                )
            )
        ).all()
    assert [r.status for r in rows] == ["running"] * 3  # the aborted update was rolled back
    assert rows[0].updated_at == datetime(2026, 12, 4, 1, tzinfo=UTC)  # the committed one kept


async def test_outside_a_transaction_sqlalchemy_autobegins(db: Database, sent: list[str]) -> None:
    """A statement on a connection with no transaction goes through SQLAlchemy
    (which begins one), so that its commit is not a silent no-op."""
    async with db.begin() as conn:
        await _seed(conn)
    before = len(sent)
    async with db.engine.connect() as conn:
        await conn.execute(
            update(workflow_instances).where(workflow_instances.c.id == 2).values(status="approved")
        )
        await conn.commit()
    assert len(sent) == before
    async with db.read() as conn:
        status = (
            await conn.execute(
                select(workflow_instances.c.status).where(workflow_instances.c.id == 2)
            )
        ).scalar_one()
    assert status == "approved"


def _terminate(db: Database, pid: int) -> None:
    """Ends backend ``pid`` from another connection, as a database restart or
    an administrator's ``pg_terminate_backend`` does."""
    url = db.url.set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", (pid,))


@pytest.mark.parametrize("backend", ["postgresql"])  # a server that drops the connection
@pytest.mark.parametrize("path", ["direct", "sqlalchemy"])
async def test_a_dropped_connection_is_invalidated_and_the_next_transaction_works(
    db: Database,
    sent: list[str],
    path: str,
    recwarn: pytest.WarningsRecorder,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A statement on a connection the server dropped (a restart under a
    running worker, issue 17 item 12) raises SQLAlchemy's OperationalError
    marked ``connection_invalidated``; the transaction's rollback and the
    check-in never touch the dropped socket (no ``MissingGreenlet``, no
    never-awaited reconnect), and the next transaction gets a live
    connection. Without handing the psycopg error to SQLAlchemy's handler the
    direct path raised ``MissingGreenlet`` out of ``Database.begin``, or the
    rollback's "connection is lost" in place of the statement's error."""
    caplog.set_level(logging.WARNING, logger="sqlalchemy")
    for _ in range(2):  # the second round reuses the pool after the first drop
        with pytest.raises(exc.OperationalError) as raised:
            async with db.begin() as conn:
                pid = (await conn.execute(text("SELECT pg_backend_pid()"))).scalar_one()
                await asyncio.to_thread(_terminate, db, pid)
                before = len(sent)
                if path == "direct":
                    await conn.execute(select(workflow_instances.c.id))
                    assert len(sent) == before + 1
                else:  # an executemany goes through SQLAlchemy
                    await conn.execute(
                        update(workflow_instances)
                        .where(workflow_instances.c.id == bindparam("i"))
                        .values(status="canceled"),
                        [{"i": 1}, {"i": 2}],
                    )
        assert raised.value.connection_invalidated
        assert "pg_backend_pid" not in str(raised.value.statement)  # the failed statement's
        assert "workflow_instances" in str(raised.value.statement)  # error, not the rollback's
        gc.collect()  # a connection left checked out would be finalized here
        async with db.begin() as conn:
            assert (await conn.execute(text("SELECT 1"))).scalar_one() == 1
    pool = db.engine.sync_engine.pool
    assert pool.checkedout() == 0  # type: ignore[attr-defined]
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]
    # the pool logged no failed reset or close (psycopg's own pipeline may
    # warn that it could not end the executemany's pipeline: that is fine)
    assert not [r for r in caplog.records if r.name.startswith("sqlalchemy")]


async def test_a_statement_object_goes_directly_from_its_second_use(
    db: Database, sent: list[str]
) -> None:
    """FIRST_USE: a statement built per call (used once) takes SQLAlchemy's
    path, whose compiled cache spares it a compilation; the same object's
    later uses are sent directly, with the same rows."""
    if db.is_sqlite:
        pytest.skip("SQLite has no direct path")
    assert isinstance(db.engine, pg_direct.DirectEngine)
    db.engine.plan_first_use = False
    query = select(workflow_instances.c.initiator).order_by(workflow_instances.c.id)
    async with db.begin() as conn:
        await _seed(conn)
        before = len(sent)
        first = (await conn.execute(query)).all()
        assert len(sent) == before  # compiled (or found) by SQLAlchemy's cache
        second = (await conn.execute(query)).all()
        assert len(sent) == before + 1 and sent[-1].startswith("SELECT")
    assert first == second and [r.initiator for r in first] == ["u0", "u1", "u2"]
