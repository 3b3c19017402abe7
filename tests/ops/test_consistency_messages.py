"""The texts of the drawer's consistency conclusions and verdict (SPEC O-10,
O-12): the console words them in zh-CN / en from ``messageParams`` (and the
verdict's ``action`` / ``params``) with ``instance:finding.*`` and
``instance:verdict.*``; its en texts must be the API's English word for
word. The console's wording (components/instance/findingText.ts) is
rendered here from the en locale for every rule, verdict code, repair and
variant, and compared with the builders of ops/diagnostics/consistency_messages.py."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from flowledger.ops.diagnostics.consistency import VERDICT_ORDER
from flowledger.ops.diagnostics.consistency_messages import (
    HEALTHY_CODES,
    age_text,
    conclusion_message,
    healthy_verdict,
    problem_verdict,
)
from flowledger.ops.health.messages import age, age_minutes
from flowledger.states import EXTERNAL_OUTCOME_UNCONFIRMED

NOW = datetime(2026, 12, 1, 12, tzinfo=UTC)
LOCALES = Path(__file__).resolve().parents[2] / "web" / "src" / "locales"
EN = json.loads((LOCALES / "en" / "instance.json").read_text(encoding="utf-8"))
FINDING, VERDICT = EN["finding"], EN["verdict"]
AGES = (0, 1, 45, 59, 60, 181, 1439, 1440, 1500, 10 * 1440)


def _fill(template: str, values: dict[str, Any]) -> str:
    return re.sub(r"{{(\w+)}}", lambda m: str(values[m.group(1)]), template)


def _age_label(minutes: int) -> str:
    """The console's age label (components/format.ts ``ageLabel``) in en."""
    if minutes < 60:
        return _fill(FINDING["age"]["minutes"], {"n": max(1, minutes)})
    if minutes < 1440:
        return _fill(FINDING["age"]["hours"], {"n": minutes // 60})
    return _fill(FINDING["age"]["days"], {"n": minutes // 1440})


def _node(key: Any) -> str:
    return _fill(FINDING["node"], {"key": key})


def _list(items: list[Any], word: Any) -> str:
    return FINDING["listSeparator"].join(word(i) for i in items)


def _label(table: dict[str, str], code: Any) -> str:
    return table.get(code, str(code))


def _values(p: dict[str, Any]) -> dict[str, Any]:
    """findingText.ts ``values``: JSON scalars as JavaScript prints them."""
    js = {True: "true", False: "false", None: "null"}
    out: dict[str, Any] = {
        k: js.get(v, v) if isinstance(v, bool | None) else v
        for k, v in p.items()
        if not isinstance(v, list) and k != "count"
    }
    if "count" in p:
        out["events"] = p["count"]
    if "nodeKey" in p:
        out["node"] = _node(p["nodeKey"])
    if "nodeKeys" in p:
        out["nodes"] = _list(p["nodeKeys"], _node)
    if "assignees" in p:
        out["assignees"] = _list(p["assignees"], str)
    if isinstance(p.get("ageMinutes"), int):
        out["age"] = _age_label(p["ageMinutes"])
    if "status" in p:
        out["status"] = _label(VERDICT["status"], p["status"])
    return out


def render_conclusion(rule: str, p: dict[str, Any]) -> str:
    texts = FINDING[rule]
    variant = "messageUnconfirmed" if p.get("outcomeUnconfirmed") is True else "message"
    if rule == "subprocess_waiting" and p["childInstanceId"] is None:
        variant = "messageNoChild"
    return _fill(texts[variant], _values(p))


def render_repair(action: str | None, params: dict[str, Any]) -> str:
    texts = VERDICT["repair"]
    if not action:
        return ""
    if action == "force_jump" and params.get("target") is None and "candidates" not in params:
        return texts["force_jump_pick"]
    if action == "force_jump" and params.get("target") is None:
        branches = _list(params.get("candidates", []), _node)
        return _fill(texts["force_jump_gateway"], {"branches": branches})
    if action == "force_jump":
        return _fill(texts["force_jump"], {"target": _node(params["target"])})
    if action == "job_retry":
        return _fill(texts["job_retry"], {"jobId": params["jobId"]})
    if action == "recovery":
        return _fill(
            texts["recovery"], {"action": _label(FINDING["recoveryAction"], params["action"])}
        )
    if action == "remind":
        return _fill(texts["remind"], {"assignee": params["assignee"]})
    if action == "replay":
        return texts["replay"]
    raise AssertionError(f"no words for {action}")


def render_problem_verdict(
    rule: str, p: dict[str, Any], action: str | None, params: dict[str, Any]
) -> str:
    text = render_conclusion(rule, p)
    return _fill(
        VERDICT["problem"],
        {"text": text[0].upper() + text[1:], "repair": render_repair(action, params)},
    )


def render_healthy_verdict(
    code: str, p: dict[str, Any], action: str | None, params: dict[str, Any]
) -> str:
    variant = "message"
    if code == "waiting_too_long" and p["overdue"] is True:
        variant = "messageOverdue"
    if code == "waiting_for_system_task" and p["taskKind"] in ("delay", "subprocess", "trigger"):
        variant = "delayUntil" if p["taskKind"] == "delay" and p["dueAt"] else p["taskKind"]
    return _fill(VERDICT["healthy"][code][variant], _values(p)) + render_repair(action, params)


# ------------------------------------------------------------ the variants

FAILED_JOB = [
    {
        "nodeKey": node,
        "jobId": 24,
        "errorCode": code,
        "outcomeUnconfirmed": code == EXTERNAL_OUTCOME_UNCONFIRMED,
    }
    for node in ("partner", "a b.c")
    for code in ("outbound_refused", "http_500", EXTERNAL_OUTCOME_UNCONFIRMED)
]
CONCLUSIONS: dict[str, list[dict[str, Any]]] = {
    "running_without_active_task": [{}],
    "running_without_active_token": [{}],
    "task_without_token": [{"taskId": 39, "nodeKey": "manager"}],
    "token_without_task": [{"tokenId": 41, "nodeKey": "region"}],
    "waiting_task_unwakeable": [{"nodeKeys": ["push"]}, {"nodeKeys": ["cooldown", "erp", "push"]}],
    "external_dispatch_failed": FAILED_JOB,
    "trigger_execution_failed": FAILED_JOB,
    "event_dispatch_failed": [{"count": n, "ageMinutes": m} for n in (1, 12) for m in AGES],
    "event_dispatch_pending": [{"count": n, "ageMinutes": m} for n in (1, 12) for m in AGES],
    # the inspection's rules O-12 does not name: the inspection item's params
    "delay_missing_wake_job": [{"nodeKey": "cooldown", "taskId": 5}],
    "delay_overdue": [
        {"nodeKey": "cooldown", "ageMinutes": m, "jobId": 6, "jobStatus": s}
        for m in AGES
        for s in ("pending", "dead")
    ],
    "task_timeout_overdue": [
        {"taskId": 3, "nodeKey": "manager", "ageMinutes": m, "jobId": 4} for m in AGES
    ],
    "trigger_waiting_no_execution": [{"nodeKey": "erp", "ageMinutes": m} for m in AGES],
    "external_dispatch_pending": [{"nodeKey": "partner", "ageMinutes": m} for m in AGES],
    "subprocess_waiting": [
        {"nodeKey": "sub", "ageMinutes": m, "childInstanceId": c} for m in AGES for c in (41, None)
    ],
    "waiting_task_stuck": [
        {"taskId": 3, "nodeKey": "manager", "ageMinutes": m, "assignee": "alice"} for m in AGES
    ],
    "instance_stalled": [{"ageMinutes": m} for m in AGES],
    "webhook_delivery_failed": [
        {"count": n, "ageMinutes": m, "jobId": 17} for n in (1, 3) for m in AGES
    ],
}
REPAIRS: list[tuple[str | None, dict[str, Any]]] = [
    (None, {}),
    ("force_jump", {"target": "manager"}),
    ("force_jump", {"target": None, "candidates": ["emea", "apac"]}),
    ("force_jump", {"target": None, "candidates": ["big"]}),
    ("force_jump", {"target": None}),
    ("job_retry", {"jobId": 20}),
    ("remind", {"taskId": 3, "assignee": "alice"}),
    (
        "replay",
        {"types": ["webhook_delivery"], "instanceId": 7, "statuses": ["dead", "failed"]},
    ),
    *[
        ("recovery", {"action": a, "jobId": None})
        for a in (
            "event-dispatch",
            "delay-wake",
            "trigger-dispatch",
            "subprocess",
            "external-dispatch",
            "task-timeout",
        )
    ],
]
PEOPLE = (["alice"], ["carol", "bob"])
HEALTHY: dict[str, list[dict[str, Any]]] = {
    "suspended": [{}],
    "ended": [{"status": s} for s in ("approved", "rejected", "withdrawn", "canceled")],
    "waiting_for_people": [{"assignees": a, "ageMinutes": m} for a in PEOPLE for m in AGES],
    "waiting_too_long": [
        {"assignees": a, "ageMinutes": m, "overdue": o}
        for a in PEOPLE
        for m in AGES
        for o in (True, False)
    ],
    "waiting_for_external_approval": [{"nodeKey": "partner", "ageMinutes": m} for m in AGES],
    "waiting_for_system_task": [
        {"taskKind": kind, "nodeKey": "cooldown", "dueAt": due, "ageMinutes": m}
        for kind in ("delay", "subprocess", "trigger", "catch")
        for due in (None, "2026-12-02T02:37:15.681444+00:00")
        if due is None or kind == "delay"
        for m in AGES
    ],
    "job_in_flight": [{"jobId": 7, "jobType": "delay_wake"}],
    "nothing_wrong": [{}],
    "no_such_instance": [{}],
}


def test_every_rule_and_code_has_words_and_variants_O12() -> None:
    assert (
        set(CONCLUSIONS)
        == set(VERDICT_ORDER)
        == set(FINDING)
        - {
            "node",
            "listSeparator",
            "age",
            "recoveryAction",
        }
    )
    assert set(HEALTHY) == set(HEALTHY_CODES) == set(VERDICT["healthy"])


@pytest.mark.parametrize("rule", VERDICT_ORDER)
def test_the_console_en_conclusion_is_the_api_message_O12(rule: str) -> None:
    for params in CONCLUSIONS[rule]:
        assert all(v is None or isinstance(v, str | int | bool | list) for v in params.values())
        assert render_conclusion(rule, params) == conclusion_message(rule, params), params


@pytest.mark.parametrize("rule", VERDICT_ORDER)
def test_the_console_en_problem_verdict_is_the_api_message_O12(rule: str) -> None:
    for params in CONCLUSIONS[rule]:
        for action, repair in REPAIRS:
            expected = problem_verdict(conclusion_message(rule, params), action, repair)
            assert render_problem_verdict(rule, params, action, repair) == expected, (
                params,
                repair,
            )


@pytest.mark.parametrize("code", HEALTHY_CODES)
def test_the_console_en_healthy_verdict_is_the_api_message_O12(code: str) -> None:
    for params in HEALTHY[code]:
        repairs: list[tuple[str | None, dict[str, Any]]] = [(None, {})]
        if code == "waiting_too_long":
            repairs = [("remind", {"taskId": 3, "assignee": params["assignees"][0]})]
        for action, repair in repairs:
            expected = healthy_verdict(code, params, action, repair)
            assert render_healthy_verdict(code, params, action, repair) == expected, params


def test_age_text_is_the_age_of_the_health_messages_O12() -> None:
    for seconds in (0, 59, 60, 3599, 3600, 86399, 86400, 10 * 86400):
        since = NOW - timedelta(seconds=seconds)
        assert age_text(age_minutes(since, NOW)) == age(since, NOW)
        assert _age_label(age_minutes(since, NOW)) == age(since, NOW)
