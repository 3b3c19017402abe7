"""The node-failure seam (SPEC C-1, X-1): :func:`node_failed` asks the
engine's hook (given when the engine is built) first and applies the
built-in behaviour only when the hook declines; the built-in passes the
node under an effective ``continue`` (failurePolicy, else a trigger's
onFailure) and otherwise fails it (exception edge, or the token stays).
Subprocess join failures go through it too."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import select

from flowledger.clock import ManualClock
from flowledger.db.database import Database
from flowledger.db.engine_schema import workflow_instances
from flowledger.definitions.model import Node
from flowledger.engine import Engine
from flowledger.engine.hooks import NO_HOOKS, EngineHooks, NodeFailureHook
from flowledger.engine.node_failures import NodeFailure
from flowledger.engine.step import Step
from flowledger.engine.tokens import Token
from tests.integration.engine_helpers import (
    END,
    START,
    approval,
    definition,
    instance,
    new_engine,
    pending_task,
    run_due_jobs,
    tasks,
    tokens,
    trace_events,
)

# deploys (the placeholder is in a header value), but renders to a CR/LF
# header from the form, which the request renderer refuses
BAD_CALL = {
    "kind": "http",
    "url": "http://127.0.0.1:9/x",
    "httpMethod": "GET",
    "headers": {"X-Host": "{{form.host}}"},
}


@pytest.fixture
def hook_calls() -> Iterator[list[tuple[str, NodeFailure]]]:
    calls: list[tuple[str, NodeFailure]] = []
    yield calls  # each test builds its engine with its own hooks: nothing to put back


def hooked_engine(db: Database, clock: ManualClock, hook: NodeFailureHook | None) -> Engine:
    return Engine(db, clock, hooks=EngineHooks(node_failure=hook))


async def deploy_bad_trigger(engine: Engine, **node: Any) -> int:
    nodes = [START, {"key": "erp", "type": "trigger", "call": BAD_CALL, **node}]
    nodes += [approval("after", "alice"), END]
    edges: list[Any] = [("start", "erp"), ("erp", "after"), ("after", "end")]
    form = [{"key": "host", "type": "string"}]
    await engine.deploy(definition("bad", nodes, edges, form), actor="admin")
    return await engine.start("bad", form={"host": "a\r\nb"}, initiator="u")


async def test_the_hook_decides_first_C1(
    db: Database, clock: ManualClock, hook_calls: list[tuple[str, NodeFailure]]
) -> None:
    async def hook(step: Step, token: Token, node: Node, failure: NodeFailure) -> list[Token]:
        hook_calls.append((node.key, failure))
        await step.trace("hooked", node_key=node.key, token_id=token.id)
        return []  # handled: the token stays where the hook left it

    iid = await deploy_bad_trigger(hooked_engine(db, clock, hook), onFailure="continue")
    [(key, failure)] = hook_calls
    assert (key, failure.code, failure.retries_exhausted) == ("erp", "trigger_call_invalid", False)
    events = [e["event"] for e in await trace_events(db, iid)]
    assert "hooked" in events and "node_failed" not in events
    assert [t["node_key"] for t in await tokens(db, iid, "active")] == ["erp"]


async def test_a_declining_hook_leaves_the_built_in_C1(
    db: Database, clock: ManualClock, hook_calls: list[tuple[str, NodeFailure]]
) -> None:
    async def hook(step: Step, token: Token, node: Node, failure: NodeFailure) -> None:
        hook_calls.append((node.key, failure))

    iid = await deploy_bad_trigger(hooked_engine(db, clock, hook), onFailure="continue")
    assert len(hook_calls) == 1
    assert [t["node_key"] for t in await tasks(db, iid, status="pending")] == ["after"]


async def test_without_continue_the_built_in_leaves_the_token_with_the_error_C1(
    db: Database, clock: ManualClock, hook_calls: list[tuple[str, NodeFailure]]
) -> None:
    # the seam's own behaviour, with no policy hook installed (with the
    # policies, retry ends in manual repair: tests/compensation/test_policies_*)
    iid = await deploy_bad_trigger(Engine(db, clock, hooks=NO_HOOKS), onFailure="retry")
    assert [t["node_key"] for t in await tokens(db, iid, "active")] == ["erp"]
    row = await instance(db, iid)
    assert row["status"] == "running" and row["error"].startswith("erp: ")


@pytest.mark.parametrize("policy", [None, "continue"])
async def test_a_failed_subprocess_goes_through_the_seam_C1(
    policy: str | None, db: Database, clock: ManualClock
) -> None:
    engine = new_engine(db, clock)
    kid_edges: list[Any] = [("start", "ok"), ("ok", "end")]
    child = definition("kid", [START, approval("ok", "bob"), END], kid_edges)
    await engine.deploy(child, actor="admin")
    sub: dict[str, Any] = {"key": "sub", "type": "subprocess", "definitionKey": "kid"}
    if policy is not None:
        sub["failurePolicy"] = {"action": policy}
    nodes = [START, sub, approval("after", "alice"), END]
    edges: list[Any] = [("start", "sub"), ("sub", "after"), ("after", "end")]
    await engine.deploy(definition("parent", nodes, edges), actor="admin")
    iid = await engine.start("parent", form={}, initiator="u")
    await run_due_jobs(db, clock)  # spawn
    async with db.read() as conn:
        child_id = (
            await conn.execute(
                select(workflow_instances.c.id).where(
                    workflow_instances.c.parent_instance_id == iid
                )
            )
        ).scalar_one()
    await engine.reject(await pending_task(db, child_id, "ok"), actor="bob")
    await run_due_jobs(db, clock)  # join
    failed = [e for e in await trace_events(db, iid) if e["event"] == "node_failed"]
    assert [e["detail"]["code"] for e in failed] == ["subprocess_failed"]
    row = await instance(db, iid)
    if policy == "continue":
        assert [t["node_key"] for t in await tasks(db, iid, status="pending")] == ["after"]
        assert row["error"] is None
    else:
        assert [t["node_key"] for t in await tokens(db, iid, "active")] == ["sub"]
        assert row["error"] == f"sub: child instance {child_id} ended rejected"
