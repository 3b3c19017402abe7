"""The engine store's JSON row documents take their columns from the table
definitions (issue 28 items 2, 5: "column lists come from the table
definitions (no hand-retyped columns, no string replacement)"; SPEC E-4,
E-5, E-8, E-10).

A step's trace, outbox, form-write, task, fork and token rows go to
PostgreSQL as one JSON document per table; which columns the document
carries, and their types, are the table's own, less the columns a shape
names as left out. A trace row names its job by the id the step reserved
for it, a plain column value (issue 28: no position matching). The
statements run on both backends (SQLite writes the same rows with Core
inserts)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import Column, Integer, MetaData, String, Table, select
from sqlalchemy.exc import DBAPIError, StatementError

from flowledger.db.database import Database
from flowledger.db.engine_schema import workflow_trace
from flowledger.engine.store import engine_store, writes
from flowledger.engine.store.json_rows import JsonRows
from flowledger.engine.store.writes import (
    FORKS,
    FORM_WRITES,
    OUTBOX,
    TASKS,
    TOKENS,
    TRACE,
    StepRows,
)

NOW = datetime(2026, 12, 5, 12, 0, tzinfo=UTC)
SHAPES = {"trace": TRACE, "outbox": OUTBOX, "forms": FORM_WRITES, "tasks": TASKS}
SHAPES |= {"forks": FORKS, "tokens": TOKENS}


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_a_documents_columns_are_its_tables_but_those_left_out(name: str) -> None:
    shape = SHAPES[name]
    expected = [c.name for c in shape.table.c if c.name not in shape.omit]
    assert [c.name for c in shape.columns] == expected
    insert = shape.insert(":rows")
    assert insert.startswith(f"INSERT INTO {shape.table.name} ({', '.join(expected)}) SELECT ")
    for column in expected:
        assert f"r.{column}" in insert


def test_a_new_column_joins_the_document_and_an_unknown_omission_is_refused() -> None:
    table = Table("t", MetaData(), Column("id", Integer, primary_key=True), Column("a", String(8)))
    before = JsonRows(table, omit=("id",))
    assert [c.name for c in before.columns] == ["a"]
    table.append_column(Column("b", Integer))
    grown = JsonRows(table, omit=("id",))
    assert "r.b" in grown.insert(":rows") and "b INTEGER" in grown.insert(":rows")
    with pytest.raises(ValueError, match="no column"):
        _ = JsonRows(table, omit=("nope",)).columns


def test_strings_are_read_unbounded_so_the_insert_refuses_a_value_too_long() -> None:
    # varchar(48) in the record would be the type's input with a length:
    # the column's own limit decides, at the insert, like any other write
    assert "event text" in TRACE.insert(":rows") and "VARCHAR" not in TRACE.insert(":rows")


def test_a_trace_rows_job_id_is_read_from_its_document_as_any_column() -> None:
    ctes = writes.pg_step_rows_ctes(StepRows(trace=[_trace("job_enqueued")]))
    assert ctes is not None
    text_sql = ctes.ctes
    assert "r.job_id" in text_sql and "job_ids" not in text_sql and "job_ord" not in text_sql


def _trace(event: str, detail: Any = None) -> dict[str, Any]:
    return {
        "instance_id": 1,
        "trace_id": "t",
        "event": event,
        "node_key": None,
        "token_id": None,
        "task_id": None,
        "job_id": None,
        "detail": detail,
        "created_at": NOW,
    }


async def test_step_rows_are_written_with_their_tables_columns_E8(db: Database) -> None:
    rows = [_trace("first", {"a": 1}), _trace("second")]
    async with db.begin() as conn:
        await engine_store(db).step_rows_write(conn, StepRows(trace=rows))
    async with db.engine.connect() as conn:
        found = (await conn.execute(select(workflow_trace).order_by(workflow_trace.c.id))).all()
    assert [(r.event, r.detail, r.created_at) for r in found] == [
        ("first", {"a": 1}, NOW),
        ("second", None, NOW),
    ]


async def test_a_value_too_long_for_its_column_is_refused_not_cut_E8(db: Database) -> None:
    too_long = _trace("x" * 49)  # workflow_trace.event is String(48)
    if db.is_sqlite:
        pytest.skip("SQLite does not enforce a string's length (its columns are untyped)")
    with pytest.raises((DBAPIError, StatementError), match="too long"):
        async with db.begin() as conn:
            await engine_store(db).step_rows_write(conn, StepRows(trace=[too_long]))
