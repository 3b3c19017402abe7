"""Deploy validates a deadline and its escalation chain (issue 31 item 4):
each bad chain is a 422 ``definition_invalid`` whose problem names the
node, the field and a stable code, with nothing written. Both backends
(the ``api`` fixture's database)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.api.conftest import Api, People, approval
from tests.hardening.edge import assert_refused, counts


def _with(deadline: dict[str, Any], *, node_type: str = "approval") -> dict[str, Any]:
    defn = copy.deepcopy(approval("dl"))
    defn["form"]["fields"].append({"key": "dueDate", "type": "date"})
    defn["nodes"][1]["deadline"] = deadline
    defn["nodes"][1]["type"] = node_type
    return defn


def _chain(*steps: dict[str, Any]) -> dict[str, Any]:
    return {"due": "PT4H", "escalation": list(steps)}


CASES = [
    ("unknown-kind", _chain({"after": "PT1H", "action": "shout"}),
     "escalation_unknown_action", "deadline.escalation[0].action"),
    ("not-increasing", _chain({"after": "PT2H", "action": "remind"},
                              {"after": "PT2H", "action": "notify_admin"}),
     "escalation_not_increasing", "deadline.escalation[1].after"),
    ("decreasing", _chain({"after": "PT3H", "action": "remind"},
                          {"after": "PT1H", "action": "notify_admin"}),
     "escalation_not_increasing", "deadline.escalation[1].after"),
    ("negative", _chain({"after": "-PT1H", "action": "remind"}),
     "non_positive_duration", "deadline.escalation[0].after"),
    ("no-target", _chain({"after": "PT1H", "action": "transfer"}),
     "escalation_target_missing", "deadline.escalation[0].to"),
    ("bad-target", _chain({"after": "PT1H", "action": "transfer", "to": "boss"}),
     "escalation_target_invalid", "deadline.escalation[0].to"),
    ("unknown-user", _chain({"after": "PT1H", "action": "transfer", "to": "user:nobody"}),
     "escalation_target_unknown", "deadline.escalation[0].to"),
    ("unknown-role", _chain({"after": "PT1H", "action": "transfer", "to": "role:wizards"}),
     "escalation_target_unknown", "deadline.escalation[0].to"),
    ("target-on-remind", _chain({"after": "PT1H", "action": "remind", "to": "manager"}),
     "field_not_applicable", "deadline.escalation[0].to"),
    ("no-due", {"escalation": []}, "deadline_missing_due", "deadline.due"),
    ("both-dues", {"due": "PT1H", "dueField": "dueDate"}, "deadline_ambiguous_due", "deadline.due"),
    ("zero-due", {"due": "PT0S"}, "non_positive_duration", "deadline.due"),
    ("unknown-field", {"dueField": "nope"}, "deadline_field_unknown", "deadline.dueField"),
    ("number-field", {"dueField": "days"}, "deadline_field_not_a_date", "deadline.dueField"),
    ("huge-due", {"due": "P99999D"}, "duration_out_of_range", "deadline.due"),
]  # fmt: skip


@pytest.mark.parametrize(("name", "deadline", "code", "field"), CASES, ids=[c[0] for c in CASES])
async def test_a_bad_deadline_is_refused_at_deploy(
    api: Api, people: People, name: str, deadline: dict[str, Any], code: str, field: str
) -> None:
    before = await counts(api.db)
    response = await api.post("/definitions", people.root, {"definition": _with(deadline)})
    body = assert_refused(response, 422, "definition_invalid", None)
    found = [(p["code"], p["node"], p["field"]) for p in body["problems"]]
    assert (code, "manager", field) in found, body
    assert await counts(api.db) == before


@pytest.mark.parametrize(
    ("deadline", "code", "field"),
    [
        ({"due": "soon"}, "invalid_value", "due"),
        (_chain({"after": "an hour", "action": "remind"}), "invalid_value", "after"),
    ],
)
async def test_a_bad_duration_is_refused_naming_it(
    api: Api, people: People, deadline: dict[str, Any], code: str, field: str
) -> None:
    response = await api.post("/definitions", people.root, {"definition": _with(deadline)})
    body = assert_refused(response, 422, "definition_invalid", None)
    [problem] = body["problems"]
    assert problem["code"] == code, body
    assert "deadline" in problem["field"] and problem["field"].endswith(field), body


async def test_a_deadline_on_a_cc_node_or_beside_a_timeout_is_refused(
    api: Api, people: People
) -> None:
    response = await api.post(
        "/definitions", people.root, {"definition": _with({"due": "PT1H"}, node_type="cc")}
    )
    body = assert_refused(response, 422, "definition_invalid", None)
    assert "deadline_not_allowed" in [p["code"] for p in body["problems"]]
    both = _with({"due": "PT1H"})
    both["nodes"][1]["timeout"] = {"after": "PT1H", "action": "notify"}
    response = await api.post("/definitions", people.root, {"definition": both})
    body = assert_refused(response, 422, "definition_invalid", None)
    assert "deadline_with_timeout" in [p["code"] for p in body["problems"]]


async def test_a_sound_chain_deploys(api: Api, people: People) -> None:
    chain = _chain(
        {"after": "PT0S", "action": "remind"},
        {"after": "PT1H", "action": "transfer", "to": "manager"},
        {"after": "PT2H", "action": "transfer", "to": "user:mia"},
        {"after": "P1D", "action": "notify_admin"},
    )
    assert (await api.deploy(people.root, _with(chain)))["key"] == "dl"
    assert (await api.deploy(people.root, _with({"dueField": "dueDate"})))["key"] == "dl"
