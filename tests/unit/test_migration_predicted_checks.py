"""The O-12 and O-16 rules on a migration's prediction (issue 30; O-12,
O-16), pure: each rule fires on the predicted document that breaks it, and
not on the one that does not."""

from __future__ import annotations

from typing import Any

import pytest

from flowledger.definitions.model import ProcessDefinition
from flowledger.ops.migration.model import InstanceResult
from flowledger.ops.migration.predicted_checks import predicted_problems

CALL = {"kind": "http", "url": "https://erp.example/x"}
TARGET = ProcessDefinition.model_validate(
    {
        "key": "p",
        "name": "p",
        "nodes": [
            {"key": "start", "type": "start"},
            {"key": "erp", "type": "trigger", "call": CALL},
            {"key": "x", "type": "external_approval", "dispatch": CALL},
            {"key": "sub", "type": "subprocess", "definitionKey": "kid"},
            {"key": "end", "type": "end"},
        ],
        "edges": [
            {"from": "start", "to": "erp"},
            {"from": "erp", "to": "x"},
            {"from": "x", "to": "sub"},
            {"from": "sub", "to": "end"},
        ],
    }
)


def _waiting(node: str, kind: str, status: str, **extra: Any) -> InstanceResult:
    result = InstanceResult(1, 1, 2)
    result.tokens = [{"tokenId": 7, "nodeKey": node, "state": "active"}]
    result.tasks = [
        {"taskId": 5, "tokenId": 7, "nodeKey": node, "kind": kind, "status": status, "dueAt": None}
    ]
    result.jobs = extra.get("jobs", [])
    result.subprocesses = extra.get("subprocesses", [])
    return result


def _job(job_type: str, node: str) -> dict[str, Any]:
    return {
        "jobId": 9,
        "type": job_type,
        "nodeKey": node,
        "taskId": 5,
        "runAt": "",
        "status": "pending",
    }


def _rules(
    result: InstanceResult, finished: dict[int, set[tuple[str, str]]] | None = None
) -> list[str]:
    return [p["rule"] for p in predicted_problems(result, TARGET, finished)]


@pytest.mark.parametrize(
    ("node", "kind", "status", "job_type", "failed", "missing"),
    [
        (
            "erp",
            "trigger",
            "waiting",
            "trigger_dispatch",
            "trigger_execution_failed",
            "trigger_waiting_no_execution",
        ),
        (
            "x",
            "external_approval",
            "pending",
            "external_dispatch",
            "external_dispatch_failed",
            "external_dispatch_pending",
        ),
    ],
)
def test_a_dispatch_wait_needs_a_live_or_succeeded_dispatch(
    node: str, kind: str, status: str, job_type: str, failed: str, missing: str
) -> None:
    assert _rules(_waiting(node, kind, status, jobs=[_job(job_type, node)])) == []
    assert _rules(_waiting(node, kind, status), {5: {(job_type, "succeeded")}}) == []
    assert _rules(_waiting(node, kind, status), {5: {(job_type, "dead")}}) == [failed]
    assert _rules(_waiting(node, kind, status), {5: {(job_type, "canceled")}}) == [missing]
    assert _rules(_waiting(node, kind, status)) == [missing]


def test_a_failed_dispatch_handed_to_a_person_is_not_a_problem() -> None:
    result = _waiting("x", "external_approval", "pending")
    result.tasks.append({**result.tasks[0], "taskId": 6, "kind": "approval"})
    assert _rules(result, {5: {("external_dispatch", "failed")}}) == []


def test_a_subprocess_wait_needs_a_child_or_a_subprocess_job() -> None:
    links = [{"taskId": 5, "nodeKey": "sub", "childInstanceIds": [3]}]
    assert _rules(_waiting("sub", "subprocess", "waiting", subprocesses=links)) == []
    assert (
        _rules(_waiting("sub", "subprocess", "waiting", jobs=[_job("subprocess_join", "sub")]))
        == []
    )
    none = [{"taskId": 5, "nodeKey": "sub", "childInstanceIds": []}]
    assert _rules(_waiting("sub", "subprocess", "waiting", subprocesses=none)) == [
        "subprocess_waiting"
    ]


def test_nothing_left_is_stalled() -> None:
    result = InstanceResult(1, 1, 2)
    found = predicted_problems(result, TARGET)
    assert [(p["rule"], p.get("healthRule")) for p in found] == [
        ("running_without_active_token", None),
        ("running_without_active_task", "instance_stalled"),
    ]
