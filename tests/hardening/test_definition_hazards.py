"""Issue 17 item 5 (SPEC E-1): definitions are validated fully at deploy —
loops without a wait state, a subprocess naming a definition that does not
exist in the tenant, placeholders in a URL's scheme or host, schemes other
than http/https, control characters in headers, durations past the
representable range, duplicate edges — each a 422 ``definition_invalid``
naming the problem, with nothing written and no traceback; and the runtime
loop guard is far cheaper. Both backends."""

from __future__ import annotations

import copy
import time
from typing import Any

import pytest

from flowledger.engine import runner
from tests.api.conftest import Api, People, approval
from tests.hardening.edge import assert_no_traceback, assert_refused, counts


@pytest.fixture(autouse=True)
def _log(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level("INFO")


def _loop() -> dict[str, Any]:
    return {
        "key": "spin",
        "name": "spin",
        "nodes": [
            {"key": "start", "type": "start"},
            {"key": "a", "type": "exclusive"},
            {"key": "b", "type": "exclusive"},
            {"key": "end", "type": "end"},
        ],
        "edges": [
            {"from": "start", "to": "a"},
            {"from": "a", "to": "b", "default": True},
            {"from": "a", "to": "end", "condition": "false"},
            {"from": "b", "to": "a", "default": True},
            {"from": "b", "to": "end", "condition": "false"},
        ],
    }


def _trigger(url: str, headers: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "key": "call",
        "name": "call",
        "nodes": [
            {"key": "start", "type": "start"},
            {
                "key": "t",
                "type": "trigger",
                "call": {"kind": "http", "url": url, "headers": headers or {}},
            },
            {"key": "end", "type": "end"},
        ],
        "edges": [{"from": "start", "to": "t"}, {"from": "t", "to": "end"}],
    }


def _subprocess(child: str) -> dict[str, Any]:
    return {
        "key": "parent",
        "name": "parent",
        "nodes": [
            {"key": "start", "type": "start"},
            {"key": "sub", "type": "subprocess", "definitionKey": child},
            {"key": "end", "type": "end"},
        ],
        "edges": [{"from": "start", "to": "sub"}, {"from": "sub", "to": "end"}],
    }


def _delay(duration: str) -> dict[str, Any]:
    return {
        "key": "wait",
        "name": "wait",
        "nodes": [
            {"key": "start", "type": "start"},
            {"key": "d", "type": "delay", "duration": duration},
            {"key": "end", "type": "end"},
        ],
        "edges": [{"from": "start", "to": "d"}, {"from": "d", "to": "end"}],
    }


def _duplicate_edge() -> dict[str, Any]:
    defn = approval("dup")
    defn["edges"].append({"from": "start", "to": "manager"})
    return defn


def _timeout(after: str) -> dict[str, Any]:
    defn = approval("late")
    defn["nodes"][1]["timeout"] = {"after": after, "action": "auto_approve"}
    return defn


CASES = [
    ("loop", _loop(), "cycle_without_wait"),
    ("placeholder-host", _trigger("https://{{form.host}}/x"), "url_placeholder_in_origin"),
    ("placeholder-scheme", _trigger("{{form.scheme}}://erp.example/x"), "url_scheme_not_allowed"),
    ("ftp", _trigger("ftp://erp.example/x"), "url_scheme_not_allowed"),
    ("file", _trigger("file:///etc/passwd"), "url_scheme_not_allowed"),
    ("header", _trigger("https://erp.example/x", {"X-A": "a\r\nX-B: b"}), "header_value_invalid"),
    ("huge-delay", _delay("P999999999D"), "duration_out_of_range"),
    ("huge-timeout", _timeout("P99999D"), "duration_out_of_range"),
    ("duplicate-edge", _duplicate_edge(), "duplicate_edge"),
    ("missing-subprocess", _subprocess("nowhere"), "subprocess_definition_missing"),
]


@pytest.mark.parametrize(("name", "definition", "code"), CASES, ids=[c[0] for c in CASES])
async def test_hazardous_definition_is_refused_at_deploy_item5(
    api: Api,
    people: People,
    caplog: pytest.LogCaptureFixture,
    name: str,
    definition: dict[str, Any],
    code: str,
) -> None:
    before = await counts(api.db)
    response = await api.post("/definitions", people.root, {"definition": definition})
    body = assert_refused(response, 422, "definition_invalid", None)
    assert code in [p["code"] for p in body["problems"]], body
    assert await counts(api.db) == before
    assert_no_traceback(caplog)


async def test_sound_variants_still_deploy_item5(api: Api, people: People) -> None:
    await api.deploy(people.root, approval("child"))
    for definition in (
        _subprocess("child"),
        _trigger("https://erp.example/{{form.id}}?q={{form.q}}", {"X-A": "plain"}),
        _delay("P30D"),
    ):
        assert (await api.deploy(people.root, definition))["key"] == definition["key"]
    # a loop through a wait state is fine
    looped = copy.deepcopy(approval("again"))
    looped["nodes"].insert(2, {"key": "gw", "type": "exclusive"})
    looped["edges"] = [
        {"from": "start", "to": "manager"},
        {"from": "manager", "to": "gw"},
        {"from": "gw", "to": "manager", "condition": "form.days > 10"},
        {"from": "gw", "to": "end", "default": True},
    ]
    await api.deploy(people.root, looped)


def test_runtime_loop_guard_is_far_cheaper_item5() -> None:
    assert runner.MAX_STEPS <= 1_000


async def test_loop_deployed_before_the_check_fails_fast_item5(
    api: Api, people: People, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A looping definition already stored (deployed before the check) stops
    within the cheaper guard instead of holding the write lock for 30-40 s."""
    from flowledger.definitions import validate

    monkeypatch.setattr(validate, "hazard_problems", lambda defn: [])
    await api.deploy(people.root, _loop())
    started = time.monotonic()
    response = await api.post("/instances", people.root, {"definitionKey": "spin"})
    assert response.status_code < 500, response.text
    assert time.monotonic() - started < 10
