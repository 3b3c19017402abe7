"""Migrating instances (issue 30), both backends, the wait states and
checks :mod:`tests.integration.test_instance_migration` does not cover: an
``any`` approval waiting (its assignees changed) and an ``all`` approval
with one approval given that becomes ``any`` on the target; a catch (repair)
node reached along a trigger's error edge; a cc passed before the wait;
timeouts (a node newly declaring one gets a ``task_timeout`` job for each
pending task moved onto it and each new task, due from the migration; a
node that no longer declares one has its jobs canceled); and the O-16
health rules on the prediction (a trigger waiting with no dispatch that
could ever call back is refused). Every plan goes through
:func:`~tests.integration.migration_support.preview_and_run`: the dry run
equals the run's result field by field, the stored state equals the
prediction, blocked instances stay untouched; each migrated instance is
then driven to its end on the target version."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from flowledger.clock import ManualClock
from flowledger.db.database import Database
from flowledger.engine import Engine
from flowledger.engine.callbacks import trigger_result
from flowledger.ops.diagnostics.consistency import instance_findings
from tests.integration import migration_support as ms
from tests.integration.engine_helpers import (
    END,
    START,
    approval,
    definition,
    instance,
    jobs,
    pending_task,
    run_due_jobs,
    tasks,
)
from tests.ledger_access import ledger_of
from tests.runtime_support import default_engine


@pytest.fixture
def engine(db: Database, clock: ManualClock) -> Engine:
    return default_engine(db, clock)


async def _no_critical(db: Database, iid: int, clock: ManualClock) -> None:
    async with db.read() as conn:
        findings = await instance_findings(conn, iid, now=clock.now())
    assert not [c for c in findings.conclusions if c.level == "critical"]


def _approvals(rev_mode: str, pick: tuple[str, ...]) -> dict[str, Any]:
    """cc ``cc1`` (carl) → ``rev`` (ann, bob; ``rev_mode``) → ``pick`` (any of ``pick``)."""
    return definition(
        "apr",
        [
            START,
            {"key": "cc1", "type": "cc", "assignees": {"users": ["carl"]}},
            approval("rev", "ann", "bob", mode=rev_mode),
            approval("pick", *pick),
            END,
        ],
        [("start", "cc1"), ("cc1", "rev"), ("rev", "pick"), ("pick", "end")],
    )


async def test_any_and_all_approvals_with_approvals_given_migrate(
    engine: Engine, db: Database, clock: ManualClock
) -> None:
    await ms.deploy(engine, _approvals("all", ("ann", "amy")), _approvals("any", ("ann", "zed")))
    halfway = await engine.start("apr", form={}, initiator="ira", version=1)
    await ms.approve(engine, db, halfway, "rev", "ann")  # all: bob still to approve
    picking = await engine.start("apr", form={}, initiator="ira", version=1)
    await ms.approve(engine, db, picking, "rev", "ann")
    await ms.approve(engine, db, picking, "rev", "bob")  # waiting at the any approval
    cc = [(t["node_key"], t["status"]) for t in await tasks(db, picking, kind="cc")]
    assert cc == [("cc1", "cc")]  # the cc passed before the wait

    by_id, _ = await ms.preview_and_run(
        engine, db, clock, ms.plan(1, 2, [halfway, picking], key="apr")
    )
    assert by_id[halfway]["verdict"] == "ok"
    assert [(t["nodeKey"], t["assignee"]) for t in by_id[halfway]["tasks"]] == [("rev", "bob")]
    assert by_id[picking]["verdict"] == "changed"
    assert by_id[picking]["changes"] == [
        {"kind": "assignee", "nodeKey": "pick", "removed": ["amy"], "added": ["zed"]}
    ]
    assert sorted(t["assignee"] for t in by_id[picking]["tasks"]) == ["ann", "zed"]
    (amy,) = await tasks(db, picking, node_key="pick", assignee="amy")
    assert amy["status"] == "skipped" and amy["comment"].startswith(
        "[Admin migration to version 2]"
    )
    for iid in (halfway, picking):
        await _no_critical(db, iid, clock)

    # halfway: rev is an any approval on version 2, so bob's approval ends it
    await ms.approve(engine, db, halfway, "rev", "bob")
    await ms.approve(engine, db, halfway, "pick", "zed")
    await ms.approve(engine, db, picking, "pick", "zed")
    for iid in (halfway, picking):
        row = await instance(db, iid)
        assert (row["status"], row["definition_version"]) == ("approved", 2)
    assert [(t["node_key"], t["status"]) for t in await tasks(db, picking, kind="cc")] == cc


def _repair(extra: bool) -> dict[str, Any]:
    """An async trigger ``erp`` whose error edge leads to the catch node
    ``repair`` (root; version 2: root and rita, then ``verify`` by vic)."""
    call = {"kind": "http", "url": "https://erp.example/orders", "mode": "async"}
    people = ["root", "rita"] if extra else ["root"]
    nodes: list[dict[str, Any]] = [
        START,
        {"key": "erp", "type": "trigger", "call": call},
        {"key": "repair", "type": "catch", "assignees": {"users": people}},
        END,
    ]
    edges: list[Any] = [
        ("start", "erp"),
        ("erp", "end"),
        {"from": "erp", "to": "repair", "on": "error"},
    ]
    if extra:
        nodes.append(approval("verify", "vic"))
        edges += [("repair", "verify"), ("verify", "end")]
    else:
        edges.append(("repair", "end"))
    return definition("rep", nodes, edges)


async def test_an_instance_at_a_catch_node_migrates(
    engine: Engine, db: Database, clock: ManualClock
) -> None:
    await ms.deploy(engine, _repair(False), _repair(True))
    iid = await engine.start("rep", form={}, initiator="ira", version=1)
    (dispatch,) = await jobs(db, iid, type="trigger_dispatch")
    await trigger_result(engine, int(dispatch["id"]), "failed", error="ERP refused the order")
    (caught,) = await tasks(db, iid, node_key="repair")
    assert (caught["kind"], caught["status"], caught["assignee"]) == ("catch", "pending", "root")

    by_id, _ = await ms.preview_and_run(engine, db, clock, ms.plan(1, 2, [iid], key="rep"))
    result = by_id[iid]
    assert result["verdict"] == "changed"
    assert sorted((t["nodeKey"], t["kind"], t["assignee"]) for t in result["tasks"]) == [
        ("repair", "catch", "rita"),
        ("repair", "catch", "root"),
    ]
    await _no_critical(db, iid, clock)
    await engine.handle(await pending_task(db, iid, "repair", "rita"), actor="rita")
    await ms.approve(engine, db, iid, "verify", "vic")
    row = await instance(db, iid)
    assert (row["status"], row["definition_version"]) == ("approved", 2)


def _timed(t_timeout: bool, u_timeout: bool, people: tuple[str, ...]) -> dict[str, Any]:
    """``t`` (all of ``people``) → ``u`` (uma), each with an auto-approve
    timeout when asked (``t``: 2 h, ``u``: 1 h)."""
    t_extra = {"timeout": {"after": "PT2H", "action": "auto_approve"}} if t_timeout else {}
    u_extra = {"timeout": {"after": "PT1H", "action": "auto_approve"}} if u_timeout else {}
    return definition(
        "tmo",
        [
            START,
            approval("t", *people, mode="all", **t_extra),
            approval("u", "uma", **u_extra),
            END,
        ],
        [("start", "t"), ("t", "u"), ("u", "end")],
    )


async def test_timeouts_follow_the_target_nodes(
    engine: Engine, db: Database, clock: ManualClock
) -> None:
    await ms.deploy(
        engine, _timed(False, True, ("ann", "bob")), _timed(True, False, ("ann", "bob", "cat"))
    )
    at_t = await engine.start("tmo", form={}, initiator="ira", version=1)
    await ms.approve(engine, db, at_t, "t", "ann")
    at_u = await engine.start("tmo", form={}, initiator="ira", version=1)
    await ms.approve(engine, db, at_u, "t", "ann")
    await ms.approve(engine, db, at_u, "t", "bob")
    (old_timeout,) = await jobs(db, at_u, type="task_timeout")
    clock.advance(seconds=600)
    migrated_at = clock.now()

    by_id, _ = await ms.preview_and_run(engine, db, clock, ms.plan(1, 2, [at_t, at_u], key="tmo"))
    due = (migrated_at + timedelta(hours=2)).isoformat()
    first = by_id[at_t]
    assert sorted((t["assignee"], t["dueAt"]) for t in first["tasks"]) == [
        ("bob", due),
        ("cat", due),
    ]
    assert sorted((j["type"], j["nodeKey"], j["runAt"]) for j in first["jobs"]) == [
        ("task_timeout", "t", due),
        ("task_timeout", "t", due),
    ]
    assert {"kind": "timeout", "nodeKey": "t", "added": 1, "canceled": 0} in first["changes"]
    second = by_id[at_u]
    assert second["jobs"] == [] and second["tasks"][0]["dueAt"] is None
    assert second["changes"] == [{"kind": "timeout", "nodeKey": "u", "added": 0, "canceled": 1}]
    (canceled,) = await jobs(db, at_u, type="task_timeout")
    assert (canceled["id"], canceled["status"]) == (old_timeout["id"], "canceled")
    for iid in (at_t, at_u):
        await _no_critical(db, iid, clock)

    # past both due times: t's two tasks time out (auto-approve), u's does not
    clock.advance(seconds=3 * 3600)
    await run_due_jobs(db, clock)
    assert [t["status"] for t in await tasks(db, at_t, node_key="t", kind="approval")] == [
        "completed",
        "completed",
        "completed",
    ]
    for iid in (at_t, at_u):
        (uma,) = await tasks(db, iid, node_key="u")
        assert (uma["status"], uma["due_at"]) == ("pending", None)
        await ms.approve(engine, db, iid, "u", "uma")
        row = await instance(db, iid)
        assert (row["status"], row["definition_version"]) == ("approved", 2)


def _trigger(after: bool) -> dict[str, Any]:
    call = {"kind": "http", "url": "https://erp.example/orders", "mode": "async"}
    nodes: list[dict[str, Any]] = [START, {"key": "erp", "type": "trigger", "call": call}]
    edges: list[Any] = [("start", "erp")]
    if after:
        nodes.append(approval("after", "amy"))
        edges += [("erp", "after"), ("after", "end")]
    else:
        edges.append(("erp", "end"))
    return definition("trg", [*nodes, END], edges)


async def test_the_dry_run_runs_the_health_rules_on_the_prediction(
    engine: Engine, db: Database, clock: ManualClock
) -> None:
    """A trigger task waiting with no dispatch job that could ever call
    (its job canceled) passes the O-12 checks — it has its token — but is
    O-16's ``trigger_waiting_no_execution``: refused, left untouched; a
    sibling instance whose dispatch is live migrates and finishes."""
    await ms.deploy(engine, _trigger(False), _trigger(True))
    stuck = await engine.start("trg", form={}, initiator="ira", version=1)
    (job,) = await jobs(db, stuck, type="trigger_dispatch")
    async with db.begin() as conn:
        await ledger_of(db).job_cancel(conn, int(job["id"]), now=clock.now(), reason="lost")
    fine = await engine.start("trg", form={}, initiator="ira", version=1)

    by_id, done = await ms.preview_and_run(
        engine, db, clock, ms.plan(1, 2, [stuck, fine], key="trg")
    )
    (reason,) = by_id[stuck]["reasons"]
    assert (reason["code"], reason["rule"], reason["healthRule"]) == (
        "consistency_check_failed",
        "trigger_waiting_no_execution",
        "trigger_waiting_no_execution",
    )
    assert reason["nodeKey"] == "erp" and "O-16" in reason["message"]
    outcomes = {i["instanceId"]: i["outcome"] for i in done["items"]}
    assert outcomes == {stuck: "blocked", fine: "migrated"}
    (dispatch,) = await jobs(db, fine, type="trigger_dispatch")
    await trigger_result(engine, int(dispatch["id"]), "succeeded", result={})
    await ms.approve(engine, db, fine, "after", "amy")
    assert (await instance(db, fine))["status"] == "approved"
