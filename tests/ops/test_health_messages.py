"""The recovery action of each health problem (SPEC O-16, O-18): the console
links a problem to the action its suggestion names, so the two must agree
for every rule — and a trigger whose outcome is unconfirmed (L-17) names no
action (a person confirms it first; a recovery never resends it)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from flowledger.ops.health_inspection import Problem
from flowledger.ops.health_messages import describe, recovery_action
from flowledger.ops.health_rules import RULE_CODES
from flowledger.ops.recovery_plan import ACTIONS
from flowledger.states import EXTERNAL_OUTCOME_UNCONFIRMED

NOW = datetime(2026, 12, 1, 12, tzinfo=UTC)


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
