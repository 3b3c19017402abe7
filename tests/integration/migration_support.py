"""Helpers for the instance migration tests (issue 30): the definitions'
versions, a plan builder, and the observed state of an instance read back
in the shape of the dry run's document, to compare prediction and result."""

from __future__ import annotations

from typing import Any

from flowledger.db.database import Database
from flowledger.ops.migration.model import MigrationPlan
from tests.integration.engine_helpers import END, START, approval, definition, jobs, tasks, tokens

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


async def observed(db: Database, instance_id: int) -> dict[str, Any]:
    """The instance's stored tokens, open tasks and unfinished jobs, shaped
    as the dry run's ``tokens``/``tasks``/``jobs`` (new task ids dropped)."""
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
            (t["node_key"], t["assignee"], t["kind"], t["status"], t["token_id"])
            for t in open_tasks
        ),
        "jobs": [
            {
                "jobId": j["id"],
                "type": j["type"],
                "nodeKey": j["node_key"],
                "taskId": j["task_id"],
                "runAt": j["run_at"].isoformat(),
                "status": j["status"],
            }
            for j in unfinished
        ],
    }


def predicted(result: dict[str, Any]) -> dict[str, Any]:
    return {
        "tokens": result["tokens"],
        "tasks": sorted(
            (t["nodeKey"], t["assignee"], t["kind"], t["status"], t["tokenId"])
            for t in result["tasks"]
        ),
        "jobs": result["jobs"],
    }
