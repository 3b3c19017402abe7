"""Force jump (SPEC O-4) at the engine layer, both backends: the preview —
the same step rolled back — equals the result field by field (tasks
terminated, tokens consumed, jobs canceled, what entering the target
creates) for a plain node, a node inside a parallel branch with and without
``fromNode``, a join, a delay (its wake job canceled) and a subprocess wait;
the skipped tasks carry the exact comment; terminal instances and unknown
targets are refused; a force jump and a task approval serialize."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from flowledger.clock import ManualClock
from flowledger.db.database import Database
from flowledger.engine import Engine
from flowledger.engine.errors import InstanceStateError, TaskStateError
from flowledger.engine.force_jump import JumpTargetInvalid, ReasonRequired
from tests.integration.engine_helpers import (
    END,
    START,
    approval,
    definition,
    jobs,
    pending_task,
    run_due_jobs,
    tasks,
    tokens,
)
from tests.runtime_support import default_engine

PLAIN = definition(
    "plain",
    [START, approval("a", "amy"), approval("b", "bob"), approval("c", "cat", "cid"), END],
    [("start", "a"), ("a", "b"), ("b", "c"), ("c", "end")],
)
PARALLEL = definition(
    "par",
    [
        START,
        {"key": "fork", "type": "parallel"},
        approval("left", "lea"),
        approval("left2", "lou"),
        approval("right", "rik"),
        {"key": "join", "type": "parallel"},
        approval("after", "ada"),
        END,
    ],
    [
        ("start", "fork"),
        ("fork", "left"),
        ("fork", "right"),
        ("left", "left2"),
        ("left2", "join"),
        ("right", "join"),
        ("join", "after"),
        ("after", "end"),
    ],
)
DELAY = definition(
    "wait",
    [START, {"key": "nap", "type": "delay", "duration": "PT2H"}, approval("b", "bob"), END],
    [("start", "nap"), ("nap", "b"), ("b", "end")],
)
KID = definition("kid", [START, approval("k", "kim"), END], [("start", "k"), ("k", "end")])
PARENT = definition(
    "parent",
    [
        START,
        {"key": "sub", "type": "subprocess", "definitionKey": "kid"},
        approval("b", "bob"),
        END,
    ],
    [("start", "sub"), ("sub", "b"), ("b", "end")],
)
TIMED = definition(
    "timed",
    [
        START,
        approval("a", "amy"),
        approval("t", "tim", timeout={"after": "PT1H", "action": "notify"}),
        END,
    ],
    [("start", "a"), ("a", "t"), ("t", "end")],
)


def _without_new_ids(outcome: dict[str, Any]) -> dict[str, Any]:
    """The preview's created ids are assigned again when the jump commits."""
    out = dict(outcome)
    out["createdTasks"] = [
        {k: v for k, v in t.items() if k != "taskId"} for t in out["createdTasks"]
    ]
    out["createdJobs"] = [
        {k: v for k, v in j.items() if k not in ("jobId", "taskId")} for j in out["createdJobs"]
    ]
    out["createdTokens"] = [
        {k: v for k, v in t.items() if k != "tokenId"} for t in out["createdTokens"]
    ]
    return out


async def _jump_both(engine: Engine, instance_id: int, **kw: Any) -> dict[str, Any]:
    preview = (await engine.force_jump(instance_id, actor="ops", preview=True, **kw)).to_public()
    result = (await engine.force_jump(instance_id, actor="ops", **kw)).to_public()
    assert _without_new_ids(preview) == _without_new_ids(result)
    return result


@pytest.fixture
def engine(db: Database, clock: ManualClock) -> Engine:
    return default_engine(db, clock)


async def _deploy(engine: Engine, *defs: dict[str, Any]) -> None:
    for d in defs:
        await engine.deploy(d, actor="dev")


async def test_plain_node_preview_equals_result(engine: Engine, db: Database) -> None:
    await _deploy(engine, PLAIN)
    iid = await engine.start("plain", form={}, initiator="ann")
    task_a = await pending_task(db, iid, "a")
    result = await _jump_both(engine, iid, target="c", reason="amy left the company")
    assert result["terminatedTasks"] == [
        {
            "taskId": task_a,
            "nodeKey": "a",
            "kind": "approval",
            "assignee": "amy",
            "status": "pending",
        }
    ]
    assert [t["nodeKey"] for t in result["consumedTokens"]] == ["a"]
    assert [(t["nodeKey"], t["assignee"], t["status"]) for t in result["createdTasks"]] == [
        ("c", "cat", "pending"),
        ("c", "cid", "pending"),
    ]
    skipped = (await tasks(db, iid, id=task_a))[0]
    assert skipped["status"] == "skipped"
    assert skipped["comment"] == "[Admin force jump to «c»] amy left the company"
    assert skipped["finished_by"] == "ops"
    live = await tokens(db, iid, "active")
    assert [t["node_key"] for t in live] == ["c"]
    # the instance goes on normally from the target
    first = (await tasks(db, iid, status="pending"))[0]
    await engine.approve(int(first["id"]), actor="ops")
    assert await tokens(db, iid, "active") == []


async def test_timeout_job_of_a_skipped_task_is_canceled_and_target_jobs_created(
    engine: Engine, db: Database
) -> None:
    await _deploy(engine, TIMED)
    iid = await engine.start("timed", form={}, initiator="ann")
    # into t (which has a timeout job), then jump back to a
    await engine.approve(await pending_task(db, iid, "a"), actor="amy")
    timeout_job = (await jobs(db, iid, type="task_timeout"))[0]
    result = await _jump_both(engine, iid, target="a", reason="redo a")
    assert [j["jobId"] for j in result["canceledJobs"]] == [timeout_job["id"]]
    assert (await jobs(db, iid, id=timeout_job["id"]))[0]["status"] == "canceled"
    # and jumping to t creates a new timeout job, exactly as previewed
    result = await _jump_both(engine, iid, target="t", reason="again")
    assert [(j["type"], j["nodeKey"]) for j in result["createdJobs"]] == [("task_timeout", "t")]


async def test_parallel_branch_with_from_node_moves_only_that_branch(
    engine: Engine, db: Database
) -> None:
    await _deploy(engine, PARALLEL)
    iid = await engine.start("par", form={}, initiator="ann")
    right_task = await pending_task(db, iid, "right")
    result = await _jump_both(engine, iid, target="left2", reason="skip left", from_node="left")
    assert [t["nodeKey"] for t in result["terminatedTasks"]] == ["left"]
    assert [t["nodeKey"] for t in result["consumedTokens"]] == ["left"]
    assert len(result["createdTokens"][0]["forkStack"]) == 1  # still inside the fork
    assert (await tasks(db, iid, id=right_task))[0]["status"] == "pending"
    # the join still counts the moved branch: both branches done -> after
    await engine.approve(await pending_task(db, iid, "left2"), actor="lou")
    await engine.approve(right_task, actor="rik")
    assert await pending_task(db, iid, "after")


async def test_parallel_branch_without_from_node_replaces_every_position(
    engine: Engine, db: Database
) -> None:
    await _deploy(engine, PARALLEL)
    iid = await engine.start("par", form={}, initiator="ann")
    result = await _jump_both(engine, iid, target="left2", reason="reset")
    assert sorted(t["nodeKey"] for t in result["terminatedTasks"]) == ["left", "right"]
    assert sorted(t["nodeKey"] for t in result["consumedTokens"]) == ["left", "right"]
    assert result["createdTokens"][0]["forkStack"] == []
    assert [t["node_key"] for t in await tokens(db, iid, "active")] == ["left2"]
    # with no fork frame the join passes the single token straight through
    await engine.approve(await pending_task(db, iid, "left2"), actor="lou")
    assert await pending_task(db, iid, "after")


async def test_join_target_and_parked_tokens(engine: Engine, db: Database) -> None:
    await _deploy(engine, PARALLEL)
    iid = await engine.start("par", form={}, initiator="ann")
    await engine.approve(await pending_task(db, iid, "right"), actor="rik")
    parked = await tokens(db, iid, "parked")
    assert [t["node_key"] for t in parked] == ["join"]
    result = await _jump_both(engine, iid, target="join", reason="branches done by hand")
    consumed = {(t["nodeKey"], t["state"]) for t in result["consumedTokens"]}
    assert consumed == {("left", "active"), ("join", "parked")}
    # entering the join without a frame passes through to "after"
    assert [(t["nodeKey"], t["assignee"]) for t in result["createdTasks"]] == [("after", "ada")]


async def test_delay_wake_job_is_canceled(engine: Engine, db: Database, clock: ManualClock) -> None:
    await _deploy(engine, DELAY)
    iid = await engine.start("wait", form={}, initiator="ann")
    wake = (await jobs(db, iid, type="delay_wake"))[0]
    result = await _jump_both(engine, iid, target="b", reason="no need to wait")
    assert result["canceledJobs"] == [
        {
            "jobId": wake["id"],
            "type": "delay_wake",
            "nodeKey": "nap",
            "taskId": wake["task_id"],
            "status": "pending",
        }
    ]
    assert [(t["nodeKey"], t["kind"], t["status"]) for t in result["terminatedTasks"]] == [
        ("nap", "delay", "waiting")
    ]
    assert (await jobs(db, iid, id=wake["id"]))[0]["status"] == "canceled"
    clock.advance(seconds=3 * 3600)
    await run_due_jobs(db, clock)
    assert await pending_task(db, iid, "b")


async def test_subprocess_wait(engine: Engine, db: Database, clock: ManualClock) -> None:
    await _deploy(engine, KID, PARENT)
    iid = await engine.start("parent", form={}, initiator="ann")
    spawn = (await jobs(db, iid, type="subprocess_spawn"))[0]
    # jump away before the child exists: the spawn job is canceled
    result = await _jump_both(engine, iid, target="b", reason="do it by hand")
    assert [j["jobId"] for j in result["canceledJobs"]] == [spawn["id"]]
    assert [(t["nodeKey"], t["kind"]) for t in result["terminatedTasks"]] == [("sub", "subprocess")]
    # and back into the subprocess: a new wait and spawn job, as previewed
    result = await _jump_both(engine, iid, target="sub", reason="retry the child")
    assert [(t["nodeKey"], t["status"]) for t in result["createdTasks"]] == [("sub", "waiting")]
    assert [j["type"] for j in result["createdJobs"]] == ["subprocess_spawn"]
    await run_due_jobs(db, clock)  # the child starts; the parent waits on it
    result = await _jump_both(engine, iid, target="b", reason="child not needed")
    assert [(t["nodeKey"], t["status"]) for t in result["terminatedTasks"]] == [("sub", "waiting")]


async def test_refusals(engine: Engine, db: Database) -> None:
    await _deploy(engine, PLAIN)
    iid = await engine.start("plain", form={}, initiator="ann")
    with pytest.raises(ReasonRequired):
        await engine.force_jump(iid, target="b", reason="   ", actor="ops")
    with pytest.raises(JumpTargetInvalid) as unknown:
        await engine.force_jump(iid, target="nowhere", reason="x", actor="ops")
    assert unknown.value.field == "target"
    await engine.cancel(iid, actor="ops")
    with pytest.raises(InstanceStateError):
        await engine.force_jump(iid, target="b", reason="x", actor="ops")


async def test_jump_and_approval_serialize(engine: Engine, db: Database) -> None:
    """Both lock the instance row first: whichever runs second sees the
    other's result and is refused (409 in the API)."""
    await _deploy(
        engine,
        definition("one", [START, approval("a", "amy"), END], [("start", "a"), ("a", "end")]),
    )
    outcomes: list[str] = []
    for _ in range(3):
        iid = await engine.start("one", form={}, initiator="ann")
        task = await pending_task(db, iid, "a")
        results = await asyncio.gather(
            engine.force_jump(iid, target="a", reason="reset", actor="ops"),
            engine.approve(task, actor="amy"),
            return_exceptions=True,
        )
        jump, approve = results
        if isinstance(approve, TaskStateError):
            assert not isinstance(jump, BaseException)
            outcomes.append("jump")
        else:
            assert approve is None, approve
            assert isinstance(jump, InstanceStateError), jump
            outcomes.append("approve")
    assert outcomes
