"""Helpers for the instance migration tests (issue 30): the definitions'
versions, a plan builder, the observed state of an instance read back in
the shape of the dry run's document, to compare prediction and result, and
:func:`preview_and_run`, which previews a plan, runs it and checks the run
against the dry run field by field."""

from __future__ import annotations

from typing import Any

from flowledger.clock import ManualClock
from flowledger.db.database import Database
from flowledger.engine import Engine
from flowledger.ops.migration import service
from flowledger.ops.migration.model import MigrationPlan
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


async def deploy(engine: Engine, *defs: dict[str, Any]) -> None:
    """Deploy each definition (the source and target versions of a test)."""
    for d in defs:
        await engine.deploy(d, actor="dev")


async def approve(engine: Engine, db: Database, iid: int, node: str, who: str) -> None:
    """``who`` approves their pending task of ``iid`` at ``node``."""
    await engine.approve(await pending_task(db, iid, node, who), actor=who)


FORK = {"key": "fork", "type": "parallel"}
JOIN = {"key": "join", "type": "parallel"}
NAP = {"key": "nap", "type": "delay", "duration": "PT2H"}


def branches_v1() -> dict[str, Any]:
    """fork → ``a`` (all: ann, bob) and ``nap`` (2 h) → join → ``fin`` (fay)."""
    return definition(
        "mig",
        [
            START,
            FORK,
            approval("a", "ann", "bob", mode="all"),
            NAP,
            JOIN,
            approval("fin", "fay"),
            END,
        ],
        [
            ("start", "fork"),
            ("fork", "a"),
            ("fork", "nap"),
            ("a", "join"),
            ("nap", "join"),
            ("join", "fin"),
            ("fin", "end"),
        ],
    )


def branches_v2() -> dict[str, Any]:
    """``a`` renamed ``a2`` and cat added to it; a new approval ``chk`` (chris)
    after ``nap``; ``fin`` unchanged."""
    return definition(
        "mig",
        [
            START,
            FORK,
            approval("a2", "ann", "bob", "cat", mode="all"),
            NAP,
            approval("chk", "chris"),
            JOIN,
            approval("fin", "fay"),
            END,
        ],
        [
            ("start", "fork"),
            ("fork", "a2"),
            ("fork", "nap"),
            ("a2", "join"),
            ("nap", "chk"),
            ("chk", "join"),
            ("join", "fin"),
            ("fin", "end"),
        ],
    )


def branches_v3() -> dict[str, Any]:
    """The blocking target: ``a`` gone (``a3``), ``nap`` now an approval,
    ``cost`` required."""
    return definition(
        "mig",
        [
            START,
            FORK,
            approval("a3", "ann"),
            approval("nap", "ned"),
            JOIN,
            approval("fin", "fay"),
            END,
        ],
        [
            ("start", "fork"),
            ("fork", "a3"),
            ("fork", "nap"),
            ("a3", "join"),
            ("nap", "join"),
            ("join", "fin"),
            ("fin", "end"),
        ],
        form=[{"key": "cost", "type": "number", "required": True}],
    )


def branches_v4() -> dict[str, Any]:
    """A delay ``late`` after the join: mapping ``nap`` onto it leaves the
    join waiting for a branch that can no longer reach it."""
    return definition(
        "mig",
        [
            START,
            FORK,
            approval("a", "ann", "bob", mode="all"),
            NAP,
            JOIN,
            {"key": "late", "type": "delay", "duration": "PT1H"},
            approval("fin", "fay"),
            END,
        ],
        [
            ("start", "fork"),
            ("fork", "a"),
            ("fork", "nap"),
            ("a", "join"),
            ("nap", "join"),
            ("join", "late"),
            ("late", "fin"),
            ("fin", "end"),
        ],
    )


def plan(from_version: int, to_version: int, ids: list[int], **kw: Any) -> MigrationPlan:
    return MigrationPlan(
        definition_key=kw.pop("key", "mig"),
        from_versions=(from_version,),
        to_version=to_version,
        reason=kw.pop("reason", "process changed: new check after the wait"),
        instance_ids=tuple(ids),
        **kw,
    )


async def observed(
    db: Database, instance_id: int, known: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The instance's stored tokens, open tasks and unfinished jobs, shaped
    as the dry run's ``tokens``/``tasks``/``jobs``. ``known``: a dry run's
    document, whose task and job ids are the ones that existed before the
    run — any other id (a task or job the run created, which the dry run
    names null) reads as null."""
    tasks_known = {t["taskId"] for t in (known or {}).get("tasks", []) if t["taskId"]}
    tasks_known |= {j["taskId"] for j in (known or {}).get("jobs", []) if j["jobId"]}
    jobs_known = {j["jobId"] for j in (known or {}).get("jobs", []) if j["jobId"]}

    def task_id(value: Any) -> Any:
        return value if known is None or value is None or value in tasks_known else None

    live = [t for t in await tokens(db, instance_id) if t["state"] != "consumed"]
    open_tasks = [t for t in await tasks(db, instance_id) if t["status"] in ("pending", "waiting")]
    unfinished = [
        j for j in await jobs(db, instance_id) if j["status"] in ("pending", "running", "paused")
    ]
    return {
        "tokens": [
            {"tokenId": t["id"], "nodeKey": t["node_key"], "state": t["state"]} for t in live
        ],
        "tasks": sorted(
            (
                t["node_key"],
                t["assignee"],
                t["kind"],
                t["status"],
                t["token_id"],
                None if t["due_at"] is None else t["due_at"].isoformat(),
            )
            for t in open_tasks
        ),
        "jobs": sorted(
            (
                (
                    j["id"] if known is None or j["id"] in jobs_known else None,
                    j["type"],
                    j["node_key"],
                    task_id(j["task_id"]),
                    j["run_at"].isoformat(),
                    j["status"],
                )
                for j in unfinished
            ),
            key=repr,
        ),
    }


def predicted(result: dict[str, Any]) -> dict[str, Any]:
    return {
        "tokens": result["tokens"],
        "tasks": sorted(
            (t["nodeKey"], t["assignee"], t["kind"], t["status"], t["tokenId"], t["dueAt"])
            for t in result["tasks"]
        ),
        "jobs": sorted(
            (
                (j["jobId"], j["type"], j["nodeKey"], j["taskId"], j["runAt"], j["status"])
                for j in result["jobs"]
            ),
            key=repr,
        ),
    }


async def preview_and_run(
    engine: Engine, db: Database, clock: ManualClock, plan: MigrationPlan
) -> tuple[dict[int, dict[str, Any]], dict[str, Any]]:
    """Preview, check that it wrote nothing, run; the dry run by instance
    and the run's progress. Asserts the run's result per instance equals its
    dry run, field by field, the stored state of every migrated instance
    its prediction, and every blocked instance untouched (its tokens, open
    tasks, unfinished jobs and version)."""
    assert plan.instance_ids is not None
    before = {i: await observed(db, i) for i in plan.instance_ids}
    versions = {i: (await instance(db, i))["definition_version"] for i in plan.instance_ids}
    dry = await service.preview(db, plan, actor="ops", clock=clock)
    assert {i: await observed(db, i) for i in plan.instance_ids} == before
    by_id = {r["instanceId"]: r for r in dry.results}
    migration_id = await service.run(db, engine.store, plan, actor="ops", clock=clock)
    done = await service.progress(db, migration_id)
    assert done["status"] == "done"
    assert done["progress"]["total"] == len(plan.instance_ids)
    for item in done["items"]:
        iid = item["instanceId"]
        assert item["result"] == by_id[iid]  # dry run == run, field by field
        if item["outcome"] == "migrated":
            stored, expected = await observed(db, iid, item["result"]), predicted(item["result"])
            assert stored == expected, (iid, stored, expected)
            assert (await instance(db, iid))["definition_version"] == plan.to_version
        else:
            assert item["outcome"] == "blocked"
            assert await observed(db, iid) == before[iid]
            assert (await instance(db, iid))["definition_version"] == versions[iid]
    return by_id, done
