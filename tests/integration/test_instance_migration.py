"""Migrating running instances to another definition version (issue 30), at
the service layer, both backends: instances waiting at an ``all`` approval
with one approval given, at a parallel join with one branch arrived, at a
delay, at an async trigger waiting for its callback and at a subprocess are
previewed, migrated and driven to the end on the target version; the dry
run's document equals the run's for every instance, and the stored state
after the run equals the prediction; each blocked case is refused in the
dry run and left untouched by the run; the trace and the operation audit
record the migration."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import select

from flowledger.clock import ManualClock
from flowledger.db.database import Database
from flowledger.db.engine_schema import operation_audit
from flowledger.engine import Engine
from flowledger.engine.callbacks import external_decision, trigger_result
from flowledger.engine.force_jump import ReasonRequired
from flowledger.ops.diagnostics.consistency import instance_findings
from flowledger.ops.migration import service
from flowledger.ops.migration.model import MigrationInvalid
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
    trace_events,
)
from tests.runtime_support import default_engine


@pytest.fixture
def engine(db: Database, clock: ManualClock) -> Engine:
    return default_engine(db, clock)


_preview_and_run = ms.preview_and_run


async def test_branches_migrate_and_finish_on_the_target_version(
    engine: Engine, db: Database, clock: ManualClock
) -> None:
    await ms.deploy(engine, ms.branches_v1(), ms.branches_v2())
    halfway = await engine.start("mig", form={}, initiator="ira", version=1)
    await ms.approve(engine, db, halfway, "a", "ann")  # all-approval: bob still open
    joined = await engine.start("mig", form={}, initiator="ira", version=1)
    await ms.approve(engine, db, joined, "a", "ann")
    await ms.approve(engine, db, joined, "a", "bob")  # branch arrived at the join
    wakes = {
        i: [j["run_at"] for j in await jobs(db, i, type="delay_wake")] for i in (halfway, joined)
    }
    clock.advance(seconds=1800)

    plan = ms.plan(1, 2, [halfway, joined], mapping={"a": "a2"})
    by_id, done = await _preview_and_run(engine, db, clock, plan)

    first = by_id[halfway]
    assert first["verdict"] == "changed"
    kinds = {c["kind"]: c for c in first["changes"]}
    assert kinds["assignee"] == {
        "kind": "assignee",
        "nodeKey": "a2",
        "removed": [],
        "added": ["cat"],
    }
    assert kinds["node_renamed"]["nodes"] == [{"from": "a", "to": "a2"}]
    assert sorted((t["nodeKey"], t["assignee"]) for t in first["tasks"]) == [
        ("a2", "bob"),
        ("a2", "cat"),
        ("nap", "system"),
    ]
    second = by_id[joined]
    assert second["verdict"] == "ok"
    assert second["joins"] == [
        {"nodeKey": "join", "expected": 2, "arrived": 1, "waitingFor": ["nap"]}
    ]
    for iid in (halfway, joined):
        row = await instance(db, iid)
        assert row["definition_version"] == 2 and row["snapshot"]["nodes"][3]["key"] == "nap"
        # the wake time carries over
        assert [j["run_at"] for j in await jobs(db, iid, type="delay_wake")] == wakes[iid]
        trace = [t for t in await trace_events(db, iid) if t["event"] == "instance_migrated"]
        assert trace[0]["detail"]["fromVersion"] == 1 and trace[0]["detail"]["toVersion"] == 2
        assert trace[0]["detail"]["reason"] == plan.reason
        assert trace[0]["detail"]["mapping"]["a"] == "a2"
        async with db.read() as conn:
            findings = await instance_findings(conn, iid, now=clock.now())
        assert not [c for c in findings.conclusions if c.level == "critical"]
    async with db.read() as conn:
        audit = (
            (
                await conn.execute(
                    select(operation_audit).where(operation_audit.c.action == "instance.migrate")
                )
            )
            .mappings()
            .all()
        )
    assert sorted(int(a["target_id"]) for a in audit) == [halfway, joined]
    assert {a["actor"] for a in audit} == {"ops"}
    assert all(a["detail"]["migrationId"] == done["id"] for a in audit)

    # drive both to the end on version 2: bob and cat approve a2, the delay
    # wakes into the new node chk, chris approves, the join fires, fay approves
    await ms.approve(engine, db, halfway, "a2", "bob")
    await ms.approve(engine, db, halfway, "a2", "cat")
    clock.advance(seconds=3 * 3600)
    await run_due_jobs(db, clock)
    for iid in (halfway, joined):
        await ms.approve(engine, db, iid, "chk", "chris")
        await ms.approve(engine, db, iid, "fin", "fay")
        assert (await instance(db, iid))["status"] == "approved"


async def test_blocked_instances_are_refused_and_left_untouched(
    engine: Engine, db: Database, clock: ManualClock
) -> None:
    await ms.deploy(engine, ms.branches_v1(), ms.branches_v2(), ms.branches_v3(), ms.branches_v4())
    halfway = await engine.start("mig", form={}, initiator="ira", version=1)
    joined = await engine.start("mig", form={}, initiator="ira", version=1)
    await ms.approve(engine, db, joined, "a", "ann")
    await ms.approve(engine, db, joined, "a", "bob")
    paused = await engine.start("mig", form={}, initiator="ira", version=1)
    await engine.suspend(paused, actor="ops", reason="hold")
    ended = await engine.start("mig", form={}, initiator="ira", version=1)
    await engine.cancel(ended, actor="ops", reason="gone")

    # to v3: a not mapped, nap changes type, cost required
    by_id, done = await _preview_and_run(
        engine, db, clock, ms.plan(1, 3, [halfway, paused, ended], mapping={"nap": "nap"})
    )
    codes = {i: {r["code"] for r in by_id[i]["reasons"]} for i in by_id}
    assert {"node_not_mapped", "node_type_changed", "required_field_missing"} <= codes[halfway]
    assert "instance_suspended" in codes[paused]
    assert "not_running" in codes[ended]
    assert {item["outcome"] for item in done["items"]} == {"blocked"}
    for iid in (halfway, paused):
        assert (await instance(db, iid))["definition_version"] == 1

    # to v4: the join would wait for nap, which no longer reaches it
    by_id, _ = await _preview_and_run(
        engine, db, clock, ms.plan(1, 4, [joined], mapping={"nap": "late"})
    )
    assert [r["code"] for r in by_id[joined]["reasons"]] == ["join_branch_missing"]
    assert (await instance(db, joined))["definition_version"] == 1

    # the value of the new required field unblocks that reason only
    by_id_v = (
        await service.preview(
            db, ms.plan(1, 3, [halfway], field_values={"cost": 12}), actor="ops", clock=clock
        )
    ).results[0]
    assert "required_field_missing" not in {r["code"] for r in by_id_v["reasons"]}
    templated = (
        await service.preview(
            db,
            ms.plan(1, 3, [halfway], field_values={"cost": {"template": "{{instanceId}}"}}),
            actor="ops",
            clock=clock,
        )
    ).results[0]
    assert templated["formAdded"] == {"cost": halfway}
    with pytest.raises(MigrationInvalid) as caught:
        await service.preview(
            db,
            ms.plan(1, 3, [halfway], field_values={"cost": {"template": "{{ bad path! }}"}}),
            actor="ops",
            clock=clock,
        )
    assert caught.value.field == "fieldValues.cost"


async def test_the_run_rechecks_each_instance_under_its_lock(
    engine: Engine, db: Database, clock: ManualClock
) -> None:
    await ms.deploy(engine, ms.branches_v1(), ms.branches_v2())
    iid = await engine.start("mig", form={}, initiator="ira", version=1)
    plan = ms.plan(1, 2, [iid], mapping={"a": "a2"})
    dry = await service.preview(db, plan, actor="ops", clock=clock)
    assert dry.results[0]["verdict"] == "changed"
    await engine.suspend(iid, actor="ops", reason="hold")  # changed since the preview
    migration_id = await service.run(db, engine.store, plan, actor="ops", clock=clock)
    item = (await service.progress(db, migration_id))["items"][0]
    assert (item["outcome"], item["verdict"]) == ("blocked", "blocked")
    assert item["result"]["reasons"][0]["code"] == "instance_suspended"
    assert (await instance(db, iid))["definition_version"] == 1


KID = definition("kid", [START, approval("k", "kim"), END], [("start", "k"), ("k", "end")])
KID_V2 = definition(
    "kid",
    [START, approval("k", "kim"), approval("k2", "kai"), END],
    [("start", "k"), ("k", "k2"), ("k2", "end")],
)
OTHER_KID = definition("kid2", [START, approval("k", "kim"), END], [("start", "k"), ("k", "end")])


def _parent(sub_key: str, kid: str, after: bool) -> dict[str, Any]:
    nodes: list[dict[str, Any]] = [
        START,
        {"key": sub_key, "type": "subprocess", "definitionKey": kid},
    ]
    edges: list[Any] = [("start", sub_key)]
    if after:
        nodes.append(approval("after", "amy"))
        edges += [(sub_key, "after"), ("after", "end")]
    else:
        edges.append((sub_key, "end"))
    return definition("par", [*nodes, END], edges)


async def test_subprocess_parent_migrates_and_a_changed_child_definition_blocks(
    engine: Engine, db: Database, clock: ManualClock
) -> None:
    await ms.deploy(
        engine,
        KID,
        OTHER_KID,
        _parent("sub", "kid", False),
        _parent("call", "kid", True),
        _parent("sub", "kid2", False),
    )
    parent = await engine.start("par", form={}, initiator="ira", version=1)
    await run_due_jobs(db, clock)  # the child starts
    blocked, _ = await _preview_and_run(engine, db, clock, ms.plan(1, 3, [parent], key="par"))
    assert [r["code"] for r in blocked[parent]["reasons"]] == ["subprocess_not_migratable"]

    by_id, _ = await _preview_and_run(
        engine, db, clock, ms.plan(1, 2, [parent], key="par", mapping={"sub": "call"})
    )
    links = by_id[parent]["subprocesses"]
    assert (
        len(links) == 1 and links[0]["nodeKey"] == "call" and len(links[0]["childInstanceIds"]) == 1
    )
    child = links[0]["childInstanceIds"][0]
    # the child migrates too: a second approval after k
    await ms.deploy(engine, KID_V2)
    kids, _ = await _preview_and_run(engine, db, clock, ms.plan(1, 2, [child], key="kid"))
    assert kids[child]["verdict"] == "ok"
    await ms.approve(engine, db, child, "k", "kim")
    await ms.approve(engine, db, child, "k2", "kai")
    await run_due_jobs(db, clock)  # the child's end joins the parent
    await ms.approve(engine, db, parent, "after", "amy")
    row = await instance(db, parent)
    assert (row["status"], row["definition_version"]) == ("approved", 2)


def _trigger(key: str, after: bool) -> dict[str, Any]:
    call = {"kind": "http", "url": "https://erp.example/orders", "mode": "async"}
    nodes: list[dict[str, Any]] = [START, {"key": key, "type": "trigger", "call": call}]
    edges: list[Any] = [("start", key)]
    if after:
        nodes.append(approval("after", "amy"))
        edges += [(key, "after"), ("after", "end")]
    else:
        edges.append((key, "end"))
    return definition("trg", [*nodes, END], edges)


async def test_a_trigger_waiting_for_its_callback_is_retargeted(
    engine: Engine, db: Database, clock: ManualClock
) -> None:
    await ms.deploy(engine, _trigger("erp", False), _trigger("call", True))
    iid = await engine.start("trg", form={}, initiator="ira", version=1)
    dispatch = (await jobs(db, iid, type="trigger_dispatch"))[0]
    by_id, _ = await _preview_and_run(
        engine, db, clock, ms.plan(1, 2, [iid], key="trg", mapping={"erp": "call"})
    )
    assert by_id[iid]["jobs"][0]["nodeKey"] == "call"
    moved = (await jobs(db, iid, type="trigger_dispatch"))[0]
    assert (moved["node_key"], moved["run_at"]) == ("call", dispatch["run_at"])
    await trigger_result(engine, int(dispatch["id"]), "succeeded", result={})
    await ms.approve(engine, db, iid, "after", "amy")
    assert (await instance(db, iid))["status"] == "approved"


async def test_bad_plans_are_refused_with_the_field_named(
    engine: Engine, db: Database, clock: ManualClock
) -> None:
    await ms.deploy(engine, ms.branches_v1(), ms.branches_v2())
    iid = await engine.start("mig", form={}, initiator="ira", version=1)
    cases: list[tuple[Any, str]] = [
        (ms.plan(1, 9, [iid]), "toVersion"),
        (ms.plan(7, 2, [iid]), "fromVersions"),
        (ms.plan(1, 2, [iid], mapping={"zz": "a2"}), "mapping.zz"),
        (ms.plan(1, 2, [iid], mapping={"a": "nowhere"}), "mapping.a"),
        (ms.plan(1, 2, [iid + 100]), "instanceIds"),
        (ms.plan(1, 2, [iid], field_values={"nope": 1}), "fieldValues.nope"),
    ]
    for bad, field_name in cases:
        with pytest.raises(MigrationInvalid) as caught:
            await service.preview(db, bad, actor="ops", clock=clock)
        assert caught.value.field == field_name
    with pytest.raises(ReasonRequired):
        await service.run(
            db, engine.store, ms.plan(1, 2, [iid], reason="  "), actor="ops", clock=clock
        )


async def test_running_versions_oldest_first(
    engine: Engine, db: Database, clock: ManualClock
) -> None:
    await ms.deploy(engine, ms.branches_v1(), ms.branches_v2())
    for version in (1, 1, 2):
        await engine.start("mig", form={}, initiator="ira", version=version)
    rows = await service.running_versions(db, "mig")
    assert [(r["version"], r["running"]) for r in rows] == [(1, 2), (2, 1)]


AMOUNT = [{"key": "amount", "type": "number", "required": True}]


def _many(handle_key: str, audit: bool) -> dict[str, Any]:
    """cc → inclusive fork → handle, external approval, ``any`` approval → join."""
    dispatch = {"kind": "http", "url": "https://partner.example/approvals"}
    nodes: list[dict[str, Any]] = [
        START,
        {"key": "cc1", "type": "cc", "assignees": {"users": ["carl"]}},
        {"key": "inc", "type": "inclusive"},
        {"key": handle_key, "type": "handle", "assignees": {"users": ["hal"]}},
        {"key": "x", "type": "external_approval", "dispatch": dispatch},
        approval("an", "ann", "amy"),
        {"key": "ij", "type": "inclusive"},
        END,
    ]
    edges: list[Any] = [
        ("start", "cc1"),
        ("cc1", "inc"),
        {"from": "inc", "to": handle_key, "condition": "form.amount > 0"},
        {"from": "inc", "to": "x", "condition": "form.amount > 100"},
        {"from": "inc", "to": "an", "condition": "form.amount > 1000"},
        (handle_key, "ij"),
        ("x", "ij"),
        ("an", "ij"),
    ]
    if audit:
        nodes.append(approval("audit", "aud"))
        edges += [("ij", "audit"), ("audit", "end")]
    else:
        edges.append(("ij", "end"))
    return definition("many", nodes, edges, AMOUNT)


async def test_handle_external_any_approval_and_inclusive_join_migrate(
    engine: Engine, db: Database, clock: ManualClock
) -> None:
    await ms.deploy(engine, _many("h", False), _many("hh", True))
    iid = await engine.start("many", form={"amount": 5000}, initiator="ira", version=1)
    await ms.approve(engine, db, iid, "an", "ann")  # any: the branch arrives at the join
    by_id, _ = await _preview_and_run(
        engine, db, clock, ms.plan(1, 2, [iid], key="many", mapping={"h": "hh"})
    )
    result = by_id[iid]
    assert result["verdict"] == "changed"
    assert result["joins"] == [
        {"nodeKey": "ij", "expected": 3, "arrived": 1, "waitingFor": ["hh", "x"]}
    ]
    assert sorted((t["nodeKey"], t["kind"]) for t in result["tasks"]) == [
        ("hh", "handle"),
        ("x", "external_approval"),
    ]
    await engine.handle(await pending_task(db, iid, "hh"), actor="hal")
    await external_decision(engine, await pending_task(db, iid, "x"), "approve")
    await ms.approve(engine, db, iid, "audit", "aud")
    row = await instance(db, iid)
    assert (row["status"], row["definition_version"]) == ("approved", 2)
