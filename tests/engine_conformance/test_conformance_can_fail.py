"""The engine conformance suite can fail (issue 28 item 6: it "fails when a
plan's effect differs between them").

- A write that only the SQLite path makes is changed for one run — the
  consumption of an instance's last token when it ends
  (``engine/store/instance_end.end_instance_with_last_token``: PostgreSQL
  consumes it and ends the instance in one statement, SQLite calls
  ``consume_token_row`` first) stamps ``consumed_at`` one second late —
  and the comparison of the join plan (SPEC E-4, E-6) reports exactly
  ``workflow_tokens``, naming the row and the column.
- Without a database: the normalization renumbers ids with gaps and every
  reference to them (columns, JSON, strings), so PostgreSQL's reserved-id
  gaps compare equal; a reference that no rule declares fails the dump
  instead of being compared raw; a difference is shown per table with only
  the differing columns (SPEC E-4, E-8, L-1)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.engine.store import tokens as engine_tokens
from tests.engine_conformance import flows
from tests.engine_conformance.support import (
    Side,
    UndeclaredReference,
    assert_same,
    compare,
    normalize,
    run_on_both,
)

START = datetime(2026, 1, 1, tzinfo=UTC)


async def test_a_changed_sqlite_only_write_is_reported_in_its_table_E4_E6(
    sides: list[Side], monkeypatch: pytest.MonkeyPatch
) -> None:
    original = engine_tokens.consume_token_row
    used_by: list[str] = []

    async def one_second_late(
        conn: AsyncConnection, token_id: int, *, now: datetime, at_node: str | None = None
    ) -> int:
        used_by.append(conn.dialect.name)
        return await original(conn, token_id, now=now + timedelta(seconds=1), at_node=at_node)

    # the name as engine/store/instance_end.py imported it: its SQLite branch only
    monkeypatch.setattr("flowledger.engine.store.instance_end.consume_token_row", one_second_late)
    dumps = await run_on_both(sides, flows.join_plan)

    assert used_by == ["sqlite"]  # the instance's end, on the SQLite side only
    assert [d.table for d in compare(dumps)] == ["workflow_tokens"]
    with pytest.raises(AssertionError) as failed:
        assert_same(dumps)
    message = str(failed.value)
    assert message.startswith("the backends differ in workflow_tokens:")
    assert 'consumed_at: sqlite="T+20.000000s"  postgresql="T+19.000000s"' in message, message
    assert len(message.splitlines()) <= 5, message  # the row and its column, nothing else


def _token(id_: int, node: str, stack: list[int]) -> dict[str, Any]:
    return {
        "id": id_,
        "instance_id": 1,
        "node_key": node,
        "state": "active",
        "fork_stack": stack,
        "created_at": START + timedelta(seconds=1),
        "consumed_at": None,
    }


def _raw(token_ids: list[int], fork_id: int, task_token: int) -> dict[str, list[dict[str, Any]]]:
    """One instance with a fork frame, two branch tokens and a trace row
    naming them, with the ids given (PostgreSQL leaves gaps)."""
    return {
        "workflow_instances": [{"id": 1, "trace_id": "abc123", "created_at": START}],
        "workflow_forks": [{"id": fork_id, "instance_id": 1, "created_at": START}],
        "workflow_tokens": [_token(t, f"n{n}", [fork_id]) for n, t in enumerate(token_ids)],
        "workflow_tasks": [{"id": 4, "instance_id": 1, "token_id": task_token}],
        "workflow_trace": [
            {
                "id": 1,
                "instance_id": 1,
                "trace_id": "abc123",
                "detail": {"branches": token_ids, "to": ["a", "b"]},
            }
        ],
        "workflow_jobs": [
            {"id": 9, "instance_id": 1, "task_id": 4, "idempotency_key": "trigger:4"}
        ],
    }


def test_gapped_ids_and_their_references_compare_equal_E4_E8() -> None:
    sqlite = normalize(_raw([2, 3], fork_id=1, task_token=3), START)
    postgresql = normalize(_raw([7, 12], fork_id=5, task_token=12), START)
    assert compare({"sqlite": sqlite, "postgresql": postgresql}) == []
    assert sqlite["workflow_tokens"][1]["fork_stack"] == ["forks#1"]
    assert sqlite["workflow_trace"][0]["detail"]["branches"] == ["tokens#1", "tokens#2"]
    assert sqlite["workflow_trace"][0]["trace_id"] == "<trace_id#1>"
    assert sqlite["workflow_jobs"][0]["idempotency_key"] == "trigger:<tasks#1>"
    assert sqlite["workflow_tokens"][0]["created_at"] == "T+1.000000s"


def test_a_swapped_reference_is_a_difference_E4() -> None:
    sqlite = normalize(_raw([2, 3], fork_id=1, task_token=3), START)
    postgresql = normalize(_raw([7, 12], fork_id=5, task_token=7), START)
    [diff] = compare({"sqlite": sqlite, "postgresql": postgresql})
    assert diff.table == "workflow_tasks"
    assert diff.lines == [
        "tasks#1 differs:",
        '    token_id: sqlite="tokens#2"  postgresql="tokens#1"',
    ]


@pytest.mark.parametrize(
    ("table", "row"),
    [
        ("workflow_trace", {"id": 1, "detail": {"widgetId": 3}}),
        ("workflow_tasks", {"id": 1, "widget_id": 3}),
        ("workflow_jobs", {"id": 1, "idempotency_key": "widget:3"}),
    ],
)
def test_an_undeclared_reference_fails_the_dump_L1(table: str, row: dict[str, Any]) -> None:
    with pytest.raises(UndeclaredReference):
        normalize({table: [row]}, START)
