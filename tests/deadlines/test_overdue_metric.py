"""The ``overdue_tasks`` alert metric (issue 31 item 4; SPEC O-22): pending
tasks past their due time, overall and per tenant, on both backends; a rule
on it fires through the evaluator."""

from __future__ import annotations

from flowledger.clock import ManualClock
from flowledger.db.database import Database
from flowledger.ops.alerts.evaluator import evaluate_once
from flowledger.ops.alerts.metrics import get_metric, measure
from flowledger.ops.alerts.rules import RuleFields, create_rule
from tests.integration.engine_helpers import END, START, approval, definition, new_engine
from tests.ledger_access import ledger_of

HOUR = 3600


async def test_overdue_tasks_counts_pending_tasks_past_due(
    db: Database, clock: ManualClock
) -> None:
    metric = get_metric("overdue_tasks")
    assert metric is not None and metric.unit == "items"
    engine = new_engine(db, clock)
    nodes = [START, approval("mgr", "boss", deadline={"due": "PT1H"}), END]
    await engine.deploy(definition("od", nodes, [("start", "mgr"), ("mgr", "end")]), actor="a")
    await engine.start("od", form={}, initiator="u")
    await engine.start("od", form={}, initiator="u")

    async def values() -> dict[tuple[str, str | None], float | None]:
        async with db.read() as conn:
            wanted = [("overdue_tasks", None), ("overdue_tasks", "default"), ("overdue_tasks", "x")]
            return await measure(conn, wanted, now=clock.now())

    assert set((await values()).values()) == {0.0}
    clock.advance(seconds=HOUR)
    assert await values() == {
        ("overdue_tasks", None): 2.0,
        ("overdue_tasks", "default"): 2.0,
        ("overdue_tasks", "x"): 0.0,
    }

    async with db.begin() as conn:
        await create_rule(
            conn,
            tenant=None,
            fields=RuleFields("overdue", "overdue_tasks", "gt", 1, 0),
            actor="test",
            now=clock.now(),
        )
    summary = await evaluate_once(db, clock, ledger=ledger_of(db))
    assert (summary.evaluated, summary.firing, len(summary.fired)) == (1, 1, 1), summary
