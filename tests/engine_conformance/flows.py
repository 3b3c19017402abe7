"""The step plans of the engine conformance suite (issue 28 item 6): each is
a coroutine over one :class:`~tests.engine_conformance.support.Side` that
drives the real engine (start, task actions, lifecycle actions, the force
jump through the REST API) and the real ledger (due jobs claimed, run by
the default runtime's handlers and settled, time moved by the side's
ManualClock). The same plan runs on SQLite and on PostgreSQL; each checks
on its way that it did what it claims (a fork with two branches, a join
that fires …), so a plan that silently did nothing cannot pass as
"equal on both sides"."""

from __future__ import annotations

from typing import Any

from tests.engine_conformance.support import Side
from tests.integration.engine_helpers import (
    END,
    START,
    approval,
    definition,
    instance,
    jobs,
    pending_task,
    tasks,
    tokens,
)

FORM: list[dict[str, Any]] = [
    {"key": "orderId", "type": "string", "required": True},
    {"key": "amount", "type": "number"},
    {"key": "erpId", "type": "string"},
    {"key": "erpStatus", "type": "integer"},
    {"key": "checked", "type": "boolean"},
]
ORDER = {"orderId": "A-1", "amount": 250}


async def _open(side: Side, iid: int) -> list[tuple[str, str, str]]:
    return [
        (t["node_key"], t["assignee"], t["kind"])
        for t in await tasks(side.db, iid, status="pending")
    ]


# ------------------------------------------------------------- definitions


def forked(key: str = "forked") -> dict[str, Any]:
    """start → cc → mgr (approval) → parallel fork → a (approval, ann, with
    a 1 h notify timeout) | note (cc, cleo) → b (approval, mode all: bob
    and ben) → join → after (approval, zoe) → end. The b branch passes a
    node in the step that forks (on PostgreSQL a held branch token that
    moved on is inserted where it now is)."""
    nodes: list[dict[str, Any]] = [
        START,
        {"key": "copy", "type": "cc", "assignees": {"users": ["carl"]}},
        approval("mgr", "al"),
        {"key": "fork", "type": "parallel"},
        approval("a", "ann", timeout={"after": "PT1H", "action": "notify"}),
        {"key": "note", "type": "cc", "assignees": {"users": ["cleo"]}},
        approval("b", "bob", "ben", mode="all"),
        {"key": "join", "type": "parallel"},
        approval("after", "zoe"),
        END,
    ]
    edges: list[Any] = [
        ("start", "copy"),
        ("copy", "mgr"),
        ("mgr", "fork"),
        ("fork", "a"),
        ("fork", "note"),
        ("note", "b"),
        ("a", "join"),
        ("b", "join"),
        ("join", "after"),
        ("after", "end"),
    ]
    return definition(key, nodes, edges, FORM)


def started_fork(key: str = "startfork") -> dict[str, Any]:
    """start → inclusive fork (a if amount > 100, b if amount > 1000, c
    always) → join → end: a start that forks at once."""
    nodes: list[dict[str, Any]] = [
        START,
        {"key": "fork", "type": "inclusive"},
        approval("a", "ann", timeout={"after": "PT2H", "action": "notify"}),
        approval("b", "bob"),
        approval("c", "cid"),
        {"key": "join", "type": "inclusive"},
        END,
    ]
    edges: list[Any] = [
        ("start", "fork"),
        {"from": "fork", "to": "a", "condition": "form.amount > 100"},
        {"from": "fork", "to": "b", "condition": "form.amount > 1000"},
        ("fork", "c"),
        ("a", "join"),
        ("b", "join"),
        ("c", "join"),
        ("join", "end"),
    ]
    return definition(key, nodes, edges, FORM)


def delays(key: str = "naps") -> dict[str, Any]:
    """start → fork → short (delay 1 h) | long (delay 2 h) → join → after
    (approval, zoe) → end."""
    nodes: list[dict[str, Any]] = [
        START,
        {"key": "fork", "type": "parallel"},
        {"key": "short", "type": "delay", "duration": "PT1H"},
        {"key": "long", "type": "delay", "duration": "PT2H"},
        {"key": "join", "type": "parallel"},
        approval("after", "zoe"),
        END,
    ]
    edges: list[Any] = [
        ("start", "fork"),
        ("fork", "short"),
        ("fork", "long"),
        ("short", "join"),
        ("long", "join"),
        ("join", "after"),
        ("after", "end"),
    ]
    return definition(key, nodes, edges, FORM)


def child(key: str = "kid") -> dict[str, Any]:
    """start → check (approval, kim) → end."""
    return definition(
        key, [START, approval("check", "kim"), END], [("start", "check"), ("check", "end")], FORM
    )


def parent(key: str = "parent") -> dict[str, Any]:
    """start → fork → sub (subprocess ``kid``, orderId in, checked out) |
    desk (approval, dan) → join → after (approval, zoe) → end."""
    nodes: list[dict[str, Any]] = [
        START,
        {"key": "fork", "type": "parallel"},
        {
            "key": "sub",
            "type": "subprocess",
            "definitionKey": "kid",
            "inputMapping": {"orderId": "form.orderId", "amount": "form.amount"},
            "outputMapping": {"checked": "form.checked"},
        },
        approval("desk", "dan"),
        {"key": "join", "type": "parallel"},
        approval("after", "zoe"),
        END,
    ]
    edges: list[Any] = [
        ("start", "fork"),
        ("fork", "sub"),
        ("fork", "desk"),
        ("sub", "join"),
        ("desk", "join"),
        ("join", "after"),
        ("after", "end"),
    ]
    return definition(key, nodes, edges, FORM)


def trigger_call(side: Side, path: str, **extra: Any) -> dict[str, Any]:
    return {
        "kind": "http",
        "url": f"{side.receiver.url}/{path}/{{{{form.orderId}}}}",
        "httpMethod": "POST",
        "headers": {"X-Order": "{{form.orderId}}"},
        "bodyTemplate": '{"order": "{{form.orderId}}", "amount": {{form.amount}}}',
        **extra,
    }


def with_trigger(
    side: Side, key: str, call: dict[str, Any] | None = None, **erp: Any
) -> dict[str, Any]:
    """start → fork → erp (trigger to the receiver) | desk (approval, dan)
    → join → after (approval, zoe) → end."""
    nodes: list[dict[str, Any]] = [
        START,
        {"key": "fork", "type": "parallel"},
        {"key": "erp", "type": "trigger", "call": trigger_call(side, "erp", **(call or {})), **erp},
        approval("desk", "dan"),
        {"key": "join", "type": "parallel"},
        approval("after", "zoe"),
        END,
    ]
    edges: list[Any] = [
        ("start", "fork"),
        ("fork", "erp"),
        ("fork", "desk"),
        ("erp", "join"),
        ("desk", "join"),
        ("join", "after"),
        ("after", "end"),
    ]
    return definition(key, nodes, edges, FORM)


def cleanup(side: Side, key: str = "cleanup") -> dict[str, Any]:
    """start → fork → wait (delay 1 h) | mgr (approval, max, 1 h notify
    timeout) | erp (trigger) → join → end: every kind of live job at once."""
    nodes: list[dict[str, Any]] = [
        START,
        {"key": "fork", "type": "parallel"},
        {"key": "wait", "type": "delay", "duration": "PT1H"},
        approval("mgr", "max", timeout={"after": "PT1H", "action": "notify"}),
        {"key": "erp", "type": "trigger", "call": trigger_call(side, "erp")},
        {"key": "join", "type": "parallel"},
        END,
    ]
    edges: list[Any] = [
        ("start", "fork"),
        ("fork", "wait"),
        ("fork", "mgr"),
        ("fork", "erp"),
        ("wait", "join"),
        ("mgr", "join"),
        ("erp", "join"),
        ("join", "end"),
    ]
    return definition(key, nodes, edges, FORM)


def jumpable(key: str = "jump") -> dict[str, Any]:
    """start → fork → left (approval, lea) → left2 (approval, lou) | right
    (delay 2 h) → join → after (approval, zoe, mode any: zoe and zed) → end."""
    nodes: list[dict[str, Any]] = [
        START,
        {"key": "fork", "type": "parallel"},
        approval("left", "lea"),
        approval("left2", "lou"),
        {"key": "right", "type": "delay", "duration": "PT2H"},
        {"key": "join", "type": "parallel"},
        approval("after", "zoe", "zed"),
        END,
    ]
    edges: list[Any] = [
        ("start", "fork"),
        ("fork", "left"),
        ("fork", "right"),
        ("left", "left2"),
        ("left2", "join"),
        ("right", "join"),
        ("join", "after"),
        ("after", "end"),
    ]
    return definition(key, nodes, edges, FORM)


# -------------------------------------------------------------- the plans


async def start_plan(side: Side) -> None:
    """Deploy, then start: the inclusive fork takes a and c (amount 250),
    a's timeout job is enqueued, the start writes form, outbox and trace."""
    await side.engine.deploy(started_fork(), actor="dev")
    side.clock.advance(seconds=1)
    iid = await side.engine.start("startfork", form=ORDER, initiator="ivy")
    assert sorted(await _open(side, iid)) == [("a", "ann", "approval"), ("c", "cid", "approval")]
    assert [j["type"] for j in await jobs(side.db, iid)] == ["task_timeout"]


async def _approve_with_fork(side: Side) -> int:
    """Start (cc, then mgr), approve mgr: the parallel fork makes two
    branches, a (with its timeout job) and, past a cc node, b (two tasks,
    mode all)."""
    await side.engine.deploy(forked(), actor="dev")
    side.clock.advance(seconds=1)
    iid = await side.engine.start("forked", form=ORDER, initiator="ivy")
    side.clock.advance(seconds=5)
    await side.engine.approve(await pending_task(side.db, iid, "mgr"), actor="al", comment="ok")
    assert sorted(await _open(side, iid)) == [
        ("a", "ann", "approval"),
        ("b", "ben", "approval"),
        ("b", "bob", "approval"),
    ]
    assert len(await tokens(side.db, iid, "active")) == 2
    return iid


async def approve_with_fork_plan(side: Side) -> None:
    """See :func:`_approve_with_fork`."""
    await _approve_with_fork(side)


async def join_plan(side: Side) -> None:
    """The fork of :func:`approve_with_fork_plan`, then its branches: ann
    approves a (parks at the join; a's timeout job stays pending, its
    handler would skip it), bob and ben approve b (the join fires into
    after), zoe approves after: the instance ends approved and the end's
    cleanup cancels the timeout job (L-22)."""
    iid = await _approve_with_fork(side)
    side.clock.advance(seconds=7)
    await side.engine.approve(await pending_task(side.db, iid, "a"), actor="ann")
    assert [t["node_key"] for t in await tokens(side.db, iid, "parked")] == ["join"]
    [timeout] = await jobs(side.db, iid, type="task_timeout")
    assert timeout["status"] == "pending"  # its handler would skip it now
    side.clock.advance(seconds=3)
    await side.engine.approve(await pending_task(side.db, iid, "b", "bob"), actor="bob")
    side.clock.advance(seconds=2)
    await side.engine.approve(
        await pending_task(side.db, iid, "b", "ben"), actor="ben", form={"checked": True}
    )
    assert await _open(side, iid) == [("after", "zoe", "approval")]
    side.clock.advance(seconds=1)
    await side.engine.approve(await pending_task(side.db, iid, "after"), actor="zoe")
    assert (await instance(side.db, iid))["status"] == "approved"
    [timeout] = await jobs(side.db, iid, type="task_timeout")
    assert timeout["status"] == "canceled"  # by the end's cleanup (L-22)


async def delay_wake_plan(side: Side) -> None:
    """Two delays in parallel, each woken by its delay_wake job when due:
    the first parks at the join, the second fires it into after."""
    await side.engine.deploy(delays(), actor="dev")
    iid = await side.engine.start("naps", form=ORDER, initiator="ivy")
    assert await side.run_jobs() == 0  # nothing due yet
    side.clock.advance(seconds=3600)
    assert await side.run_jobs() == 1
    assert [t["node_key"] for t in await tokens(side.db, iid, "parked")] == ["join"]
    side.clock.advance(seconds=3600)
    assert await side.run_jobs() == 1
    assert await _open(side, iid) == [("after", "zoe", "approval")]
    assert {j["status"] for j in await jobs(side.db, iid)} == {"succeeded"}


async def subprocess_plan(side: Side) -> None:
    """A parent forks into a subprocess and a desk task: the spawn job
    starts the child (input mapping); dan approves desk (parks at the
    join); kim approves the child's task, the child ends, its end enqueues
    the parent's subprocess_join, which maps the output back and fires
    the join."""
    await side.engine.deploy(child(), actor="dev")
    await side.engine.deploy(parent(), actor="dev")
    side.clock.advance(seconds=1)
    top = await side.engine.start("parent", form=ORDER, initiator="ivy")
    assert await side.run_jobs() == 1  # subprocess_spawn
    kid = top + 1
    assert (await instance(side.db, kid))["parent_instance_id"] == top
    side.clock.advance(seconds=10)
    await side.engine.approve(await pending_task(side.db, top, "desk"), actor="dan")
    side.clock.advance(seconds=10)
    await side.engine.approve(
        await pending_task(side.db, kid, "check"), actor="kim", form={"checked": True}
    )
    assert (await instance(side.db, kid))["status"] == "approved"
    assert await side.run_jobs() == 1  # subprocess_join
    assert await _open(side, top) == [("after", "zoe", "approval")]
    assert (await instance(side.db, top))["form_data"]["checked"] is True


async def trigger_success_plan(side: Side) -> None:
    """A trigger branch calls the receiver (200 with a body), maps the
    result into the form and parks at the join; dan's approval fires it."""
    side.receiver.reply = 200
    side.receiver.body = b'{"id": "ERP-7", "lines": [1, 2]}'
    mapping = {"erpId": "response.body.id", "erpStatus": "response.status"}
    await side.engine.deploy(with_trigger(side, "erp_ok", {"resultMapping": mapping}), actor="dev")
    iid = await side.engine.start("erp_ok", form=ORDER, initiator="ivy")
    side.clock.advance(seconds=2)
    assert await side.run_jobs() == 1
    assert len(side.receiver.requests) == 1
    assert (await instance(side.db, iid))["form_data"]["erpId"] == "ERP-7"
    side.clock.advance(seconds=2)
    await side.engine.approve(await pending_task(side.db, iid, "desk"), actor="dan")
    assert await _open(side, iid) == [("after", "zoe", "approval")]


async def trigger_failure_plan(side: Side) -> None:
    """The receiver answers the trigger 422: one retry after the 30 s
    backoff (maxRetries 1), then the failure policy ``compensate`` acts:
    a pending ticket, its reverse action as a compensation_action job (the
    receiver accepts it), a repair task per administrator at the failed
    node; the desk branch is not frozen."""
    side.receiver.reply = 422
    side.receiver.routes = {"/undo/A-1": 200}
    undo = {
        "type": "http",
        "url": f"{side.receiver.url}/undo/{{{{form.orderId}}}}",
        "httpMethod": "POST",
        "headers": {"X-Node": "{{nodeKey}}"},
        "bodyTemplate": "order={{form.orderId}};node={{nodeKey}}",
        "maxRetries": 0,
    }
    definition_ = with_trigger(
        side,
        "erp_bad",
        maxRetries=1,
        compensation=undo,
        failurePolicy={"action": "compensate"},
    )
    await side.engine.deploy(definition_, actor="dev")
    iid = await side.engine.start("erp_bad", form=ORDER, initiator="ivy")
    assert await side.run_jobs() == 1
    [job] = await jobs(side.db, iid, type="trigger_dispatch")
    assert (job["status"], job["attempts"]) == ("pending", 1)
    side.clock.advance(seconds=30)
    assert await side.run_jobs() == 2  # the retry, then the compensation action
    [job] = await jobs(side.db, iid, type="trigger_dispatch")
    assert job["status"] == "dead"
    assert [r.path for r in side.receiver.requests] == ["/erp/A-1", "/erp/A-1", "/undo/A-1"]
    assert sorted(await _open(side, iid)) == [
        ("desk", "dan", "approval"),
        ("erp", "alice", "catch"),
        ("erp", "bob", "catch"),
    ]
    side.clock.advance(seconds=5)
    await side.engine.approve(await pending_task(side.db, iid, "desk"), actor="dan")


async def end_with_cleanup_plan(side: Side, how: str) -> None:
    """A fork into a delay, an approval with a timeout and a trigger, then
    the instance ends (``how``: reject, withdraw, cancel) while all three
    jobs are pending: the delay_wake and task_timeout jobs are canceled in
    the ending step (L-22); the trigger job is not, and when it runs after
    the end its handler skips it (nothing is sent)."""
    await side.engine.deploy(cleanup(side), actor="dev")
    iid = await side.engine.start("cleanup", form=ORDER, initiator="ivy")
    assert sorted(j["type"] for j in await jobs(side.db, iid, status="pending")) == [
        "delay_wake",
        "task_timeout",
        "trigger_dispatch",
    ]
    side.clock.advance(seconds=60)
    if how == "reject":
        await side.engine.reject(await pending_task(side.db, iid, "mgr"), actor="max", comment="no")
    elif how == "withdraw":
        await side.engine.withdraw(iid, actor="ivy", reason="changed my mind")
    else:
        await side.engine.cancel(iid, actor="ops", reason="duplicate")
    statuses = {j["type"]: j["status"] for j in await jobs(side.db, iid)}
    assert statuses == {
        "delay_wake": "canceled",
        "task_timeout": "canceled",
        "trigger_dispatch": "pending",
    }
    side.clock.advance(seconds=7200)
    assert await side.run_jobs() == 1  # the trigger, skipped
    assert side.receiver.requests == []


async def force_jump_plan(side: Side) -> None:
    """Through the REST API (so the operation audit is written): with
    left's task open and the right branch's delay pending, jump the whole
    instance to after — left's task skipped, both tokens consumed, the
    delay job canceled, after's two tasks created — then zed approves."""
    await side.engine.deploy(jumpable(), actor="dev")
    iid = await side.engine.start("jump", form=ORDER, initiator="ivy")
    side.clock.advance(seconds=30)
    api = await side.api()
    response = await api.post(
        f"/api/workflows/instances/{iid}/force-jump",
        json={"target": "after", "reason": "left is on leave"},
    )
    assert response.status_code == 200, response.text
    assert sorted(await _open(side, iid)) == [
        ("after", "zed", "approval"),
        ("after", "zoe", "approval"),
    ]
    [delay] = await jobs(side.db, iid, type="delay_wake")
    assert delay["status"] == "canceled"
    side.clock.advance(seconds=30)
    await side.engine.approve(await pending_task(side.db, iid, "after", "zed"), actor="zed")
    assert (await instance(side.db, iid))["status"] == "approved"
