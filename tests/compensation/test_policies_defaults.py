"""Which failure action applies (SPEC C-1) on both backends: without an
explicit ``failurePolicy`` a trigger's ``onFailure`` decides (continue passes
with a resolved ticket; retry, once its budget is spent, opens manual
repair — or follows the node's exception edge to a catch node when the
definition models one); with neither, the token stays at the node with the
error on the instance and no ticket. A subprocess node's failure (its child
rejected) goes through the same policies."""

from __future__ import annotations

from typing import Any

import pytest

from flowledger.clock import ManualClock
from flowledger.db.database import Database
from flowledger.engine import Engine
from flowledger.settings import Settings
from tests.compensation.flows import child_of
from tests.compensation.policy_flows import (
    FORM,
    ORDER,
    failure_policies,  # noqa: F401  (autouse: the policies are the engine's hooks)
    path,
    tickets_of,
    trigger,
)
from tests.integration.engine_helpers import (
    END,
    START,
    approval,
    definition,
    instance,
    pending_task,
    run_due_jobs,
    tasks,
    tokens,
)
from tests.outbound.receivers import Receiver


def _with_catch(receiver: Receiver, **erp: Any) -> dict[str, Any]:
    """start -> erp -> after -> end, erp's exception edge to ``fix`` (catch, root)."""
    nodes = [
        START,
        trigger(receiver, "erp", **erp),
        {"key": "after", "type": "handle", "assignees": {"users": ["hal"]}},
        {"key": "fix", "type": "catch", "assignees": {"users": ["root"]}},
        END,
    ]
    edges: list[Any] = [
        ("start", "erp"),
        ("erp", "after"),
        ("after", "end"),
        {"from": "erp", "to": "fix", "on": "error"},
        ("fix", "end"),
    ]
    return definition("orders", nodes, edges, FORM)


def _plain(receiver: Receiver, **erp: Any) -> dict[str, Any]:
    nodes = [
        START,
        trigger(receiver, "erp", **erp),
        {"key": "after", "type": "handle", "assignees": {"users": ["hal"]}},
        END,
    ]
    return definition("orders", nodes, [("start", "erp"), ("erp", "after"), ("after", "end")], FORM)


CASES = [
    # (onFailure, exception edge, pending tasks after, ticket kind/status, error kept)
    ("continue", False, [("after", "hal")], ("continue", "resolved"), False),
    ("retry", False, [("erp", "alice"), ("erp", "bob")], ("retry", "pending"), False),
    # C-1 order: onFailure retry decides before the exception edge (manual repair)
    ("retry", True, [("erp", "alice"), ("erp", "bob")], ("retry", "pending"), False),
    (None, True, [("fix", "root")], None, True),
    (None, False, [], None, True),
]


@pytest.mark.parametrize(("on_failure", "edge", "pending", "ticket", "error"), CASES)
async def test_without_a_policy_onfailure_then_the_exception_edge_decide_C1(
    on_failure: str | None,
    edge: bool,
    pending: list[tuple[str, str]],
    ticket: tuple[str, str] | None,
    error: bool,
    db: Database,
    clock: ManualClock,
    engine: Engine,
    receiver: Receiver,
    outbound_env: Settings,
) -> None:
    receiver.routes[path("erp")] = 422
    erp: dict[str, Any] = {"maxRetries": 0}
    if on_failure is not None:
        erp["onFailure"] = on_failure
    build = _with_catch if edge else _plain
    await engine.deploy(build(receiver, **erp), actor="dev")
    iid = await engine.start("orders", form={"orderId": ORDER}, initiator="ann")
    await run_due_jobs(db, clock)
    assert len(receiver.requests) == 1
    row = await instance(db, iid)
    assert row["status"] == "running"
    assert (row["error"] is not None) == error
    assert [(t["node_key"], t["assignee"]) for t in await tasks(db, iid, status="pending")] == (
        pending
    )
    found = [(t["kind"], t["status"]) for t in await tickets_of(db, iid)]
    assert found == ([] if ticket is None else [ticket])
    if on_failure is None:  # the built-in: the exception edge, else the token waits
        expected = ["fix"] if edge else ["erp"]
        assert [t["node_key"] for t in await tokens(db, iid, "active")] == expected


def _child() -> dict[str, Any]:
    return definition(
        "child", [START, approval("review", "bob"), END], [("start", "review"), ("review", "end")]
    )


def _parent(policy: dict[str, Any]) -> dict[str, Any]:
    """start -> sub (subprocess: child) -> after (handle, hal) -> end; ``alt``
    (handle, fay) -> end when the policy falls back to it."""
    nodes = [
        START,
        {"key": "sub", "type": "subprocess", "definitionKey": "child", "failurePolicy": policy},
        {"key": "after", "type": "handle", "assignees": {"users": ["hal"]}},
        END,
    ]
    edges: list[Any] = [("start", "sub"), ("sub", "after"), ("after", "end")]
    if policy.get("fallbackNodeKey") == "alt":
        nodes.append({"key": "alt", "type": "handle", "assignees": {"users": ["fay"]}})
        edges.append(("alt", "end"))
    return definition("parent", nodes, edges, FORM)


@pytest.mark.parametrize(
    ("policy", "pending", "ticket"),
    [
        ({"action": "notify"}, [("sub", "alice"), ("sub", "bob")], ("notify", "pending")),
        (
            {"action": "fallback", "fallbackNodeKey": "alt"},
            [("alt", "fay")],
            ("fallback", "resolved"),
        ),
    ],
)
async def test_a_failed_subprocess_takes_its_failure_policy_C1(
    policy: dict[str, Any],
    pending: list[tuple[str, str]],
    ticket: tuple[str, str],
    db: Database,
    clock: ManualClock,
    engine: Engine,
) -> None:
    await engine.deploy(_child(), actor="dev")
    await engine.deploy(_parent(policy), actor="dev")
    iid = await engine.start("parent", form={}, initiator="ann")
    await run_due_jobs(db, clock)  # subprocess_spawn starts the child
    await engine.reject(await pending_task(db, await child_of(db, iid), "review"), actor="bob")
    await run_due_jobs(db, clock)  # subprocess_join: the sub node fails

    assert (await instance(db, iid))["status"] == "running"
    assert [(t["node_key"], t["assignee"]) for t in await tasks(db, iid, status="pending")] == (
        pending
    )
    [found] = await tickets_of(db, iid)
    assert (found["kind"], found["status"], found["failed_node_key"]) == (*ticket, "sub")
    assert "rejected" in found["error"]
    if policy["action"] == "fallback":
        await engine.handle(await pending_task(db, iid, "alt"), actor="fay")
        assert (await instance(db, iid))["status"] == "approved"
