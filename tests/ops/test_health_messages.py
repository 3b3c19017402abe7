"""The recovery action of each health problem (SPEC O-16, O-18): the console
links a problem to the action its suggestion names, so the two must agree
for every rule — and a trigger whose outcome is unconfirmed (L-17) names no
action (a person confirms it first; a recovery never resends it). And the
``messageParams`` of each problem: the values its English message and
suggestion are made of, from which the console words them in zh-CN / en."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from flowledger.ops.health.inspection import Problem
from flowledger.ops.health.messages import (
    age,
    age_minutes,
    describe,
    message_params,
    recovery_action,
    repair,
)
from flowledger.ops.health.rules import RULE_CODES
from flowledger.ops.recovery.model import ACTIONS
from flowledger.states import EXTERNAL_OUTCOME_UNCONFIRMED

NOW = datetime(2026, 12, 1, 12, tzinfo=UTC)
WEB_LOCALES = Path(__file__).resolve().parents[2] / "web" / "src" / "locales"


def _problem(rule: str, detail: str | None = "outbound_refused") -> Problem:
    return Problem(rule, "critical", 7, 8, "node", 9, NOW - timedelta(hours=2), detail)


@pytest.mark.parametrize("rule", sorted(RULE_CODES))
def test_the_action_is_the_one_the_suggestion_names_O16_O18(rule: str) -> None:
    problem = _problem(rule)
    action = recovery_action(problem)
    _, suggestion = describe(problem, NOW)
    named = [a for a in ACTIONS if f"recovery {a}" in suggestion]
    assert named == ([action] if action else [])


def test_an_unconfirmed_trigger_outcome_names_no_action_L17() -> None:
    problem = _problem("trigger_execution_failed", EXTERNAL_OUTCOME_UNCONFIRMED)
    assert recovery_action(problem) is None
    assert "confirm the outcome" in describe(problem, NOW)[1]
    assert recovery_action(_problem("trigger_execution_failed")) == "trigger-dispatch"


@pytest.mark.parametrize("rule", ["token_task_mismatch", "instance_stalled", "waiting_task_stuck"])
def test_repairs_on_the_instance_name_no_action_O16(rule: str) -> None:
    assert recovery_action(_problem(rule)) is None


@pytest.mark.parametrize("rule", sorted(RULE_CODES))
def test_every_problem_has_the_repair_its_suggestion_names_O12_O16(rule: str) -> None:
    """The item's ``repair`` (the drawer offers the same one): a recovery is
    the action the suggestion names; a replay takes the instance's failed
    webhook deliveries."""
    problem = _problem(rule)
    fix = repair(problem)
    assert fix["action"] in ("force_jump", "job_retry", "recovery", "remind", "replay")
    if fix["action"] == "recovery":
        assert fix["params"] == {"action": recovery_action(problem), "jobId": 9}
    if rule == "webhook_delivery_failed":
        assert recovery_action(problem) is None
        assert fix == {
            "action": "replay",
            "params": {
                "types": ["webhook_delivery"],
                "instanceId": 7,
                "statuses": ["dead", "failed"],
            },
        }
        assert "replay" in describe(problem, NOW)[1]


# ------------------------------------------------- messageParams (O-16, i18n)

EN_HEALTH = json.loads((WEB_LOCALES / "en" / "health.json").read_text(encoding="utf-8"))
EN_PROBLEM = EN_HEALTH["problem"]


def _age_label(minutes: int) -> str:
    """The console's age label in en (components/format.ts ``ageLabel`` with
    the ``health:threshold`` keys): the en locale's own words, so a change
    of those words that the API's does not share makes the tests fail."""
    if minutes < 60:
        template, n = EN_HEALTH["threshold"]["minutes"], max(1, minutes)
    elif minutes < 1440:
        template, n = EN_HEALTH["threshold"]["hours"], minutes // 60
    else:
        template, n = EN_HEALTH["threshold"]["days"], minutes // 1440
    return template.replace("{{n}}", str(n))


def _render(rule: str, params: dict[str, Any]) -> tuple[str, str]:
    """What the console shows in en (health.ts ``problemTexts``): the rule's
    templates interpolating messageParams, ``node`` and ``age`` derived."""
    texts = EN_PROBLEM[rule]
    node_key = params.get("nodeKey")
    values = {
        **{k: ("None" if v is None else str(v)) for k, v in params.items() if k != "count"},
        "node": EN_PROBLEM["node"].replace("{{key}}", node_key)
        if node_key
        else EN_PROBLEM["itsNode"],
        "age": _age_label(params["ageMinutes"]) if "ageMinutes" in params else "",
        "events": str(params.get("count")),
    }
    message = (
        texts["messageNoChild"]
        if rule == "subprocess_waiting" and params["childInstanceId"] is None
        else texts["message"]
    )
    suggestion = (
        texts["suggestionUnconfirmed"] if params.get("outcomeUnconfirmed") else texts["suggestion"]
    )

    def fill(template: str) -> str:
        return re.sub(r"{{(\w+)}}", lambda m: values[m.group(1)], template)

    return fill(message), fill(suggestion)


def _variants(rule: str) -> list[Problem]:
    since = [NOW - timedelta(seconds=s) for s in (20, 45 * 60, 3 * 3600 + 59, 2 * 86400 + 7)]
    detail = {
        "subprocess_waiting": ["41", None],
        "trigger_execution_failed": ["outbound_refused", EXTERNAL_OUTCOME_UNCONFIRMED],
        "workflow_event_outbox_failed": ["3"],
        "workflow_event_outbox_pending": ["12"],
        "waiting_task_stuck": ["alice"],
        "delay_overdue": ["pending"],
        "webhook_delivery_failed": ["2"],
    }.get(rule, ["outbound_refused"])
    return [
        Problem(rule, "critical", 7, 8, node, 9, at, d)
        for at in since
        for d in detail
        for node in ("approve", None)
    ]


@pytest.mark.parametrize("rule", sorted(RULE_CODES))
def test_message_params_make_the_message_and_the_console_en_text_is_it_O16(rule: str) -> None:
    """The params carry every value describe() interpolates: the console's en
    templates filled with them give the API's English word for word, for
    each variant (node unknown, ages in min / h / d, no child, unconfirmed)."""
    for problem in _variants(rule):
        params = message_params(problem, NOW)
        assert all(v is None or isinstance(v, str | int | bool) for v in params.values())
        assert _render(rule, params) == describe(problem, NOW), (problem, params)


def test_age_minutes_is_the_age_text_O16() -> None:
    for seconds in (0, 59, 60, 3599, 3600, 86399, 86400, 10 * 86400):
        since = NOW - timedelta(seconds=seconds)
        assert _age_label(age_minutes(since, NOW)) == age(since, NOW)
