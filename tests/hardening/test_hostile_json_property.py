"""Issue 17 "done when" (SPEC A-4): hypothesis posts random hostile JSON —
unpaired surrogates, non-finite numbers, deep nesting, huge strings and
integers, NUL — to the instance, task and schedule endpoints, then reads
every list and detail endpoint: no answer is ever 5xx, and no traceback is
logged. Both backends."""

from __future__ import annotations

import logging

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.api.conftest import BASE, Api, People, approval

HOSTILE = st.sampled_from(
    [
        '"\\ud800"',
        '"x\\udfff"',
        '"\\ud83d\\ude00"',
        "NaN",
        "-Infinity",
        "1e999",
        "9" * 5000,
        "-9223372036854775809",
        '"\\u0000"',
        '"' + "a" * 70_000 + '"',
        "[" * 5000 + "]" * 5000,
        "{" * 40 + "}" * 40,
        '{"a":' * 33 + "1" + "}" * 33,
        "null",
        "true",
        "2",
        '"plain"',
        '{"days": 2}',
        "[]",
    ]
)
FIELDS = st.sampled_from(
    ["definitionKey", "form", "version", "initiator", "tenant", "cron", "name", "timezone",
     "comment", "to", "reason", "body", "\\ud800"]
)  # fmt: skip


@st.composite
def bodies(draw: st.DrawFn) -> str:
    kind = draw(st.integers(0, 3))
    if kind == 0:
        return draw(HOSTILE)
    members = draw(st.dictionaries(FIELDS, HOSTILE, max_size=4))
    if kind == 1:  # a valid-looking start with one hostile member inside the form
        members.setdefault("definitionKey", '"leave"')
        members["form"] = '{"days": ' + draw(HOSTILE) + "}"
    if kind == 2:
        members.setdefault("cron", '"0 9 * * *"')
    return "{" + ",".join(f'"{k}":{v}' for k, v in members.items()) + "}"


TARGETS = st.sampled_from(
    ["/instances", "/schedules", "/tasks/{task}/approve", "/tasks/{task}/reject",
     "/tasks/{task}/handle", "/tasks/{task}/transfer", "/tasks/{task}/comment",
     "/tasks/{task}/reassign", "/instances/{instance}/cancel", "/instances/{instance}/comments",
     "/definitions"]
)  # fmt: skip


async def _read_everything(api: Api, headers: dict[str, str]) -> None:
    paths = ["/instances", "/tasks", "/schedules", "/definitions", "/jobs", "/me", "/messages"]
    for path in paths:
        response = await api.get(path, headers)
        assert response.status_code < 500, (path, response.text)
        if path in ("/instances", "/tasks", "/schedules") and response.status_code == 200:
            for item in response.json().get("items", [])[:20]:
                detail = await api.get(f"{path}/{item['id']}", headers)
                assert detail.status_code < 500, (path, item["id"], detail.text)
    for key in ("leave", "\\ud800"):
        response = await api.get(f"/definitions/{key}/versions", headers)
        assert response.status_code < 500, response.text


_WORLD: dict[int, dict[str, int]] = {}


async def _world(api: Api, people: People) -> dict[str, int]:
    """One definition and instance per test database, made on the first example."""
    if id(api) not in _WORLD:
        await api.deploy(people.root, approval())
        instance = await api.start(people.ann)
        _WORLD[id(api)] = {"task": instance["tasks"][0]["id"], "instance": instance["id"]}
    return _WORLD[id(api)]


@settings(
    max_examples=60,
    deadline=None,
    database=None,
    derandomize=True,
    suppress_health_check=list(HealthCheck),
)
@given(target=TARGETS, body=bodies(), caller=st.integers(0, 3))
async def test_random_hostile_json_never_gives_5xx(
    api: Api, people: People, caplog: pytest.LogCaptureFixture, target: str, body: str, caller: int
) -> None:
    caplog.set_level(logging.INFO)
    ids = await _world(api, people)
    who = [people.root, people.ann, people.mia, people.mon][caller]
    response = await api.client.post(
        BASE + target.format(**ids),
        content=body.encode("utf-8", "surrogatepass"),
        headers={**who, "Content-Type": "application/json"},
    )
    assert response.status_code < 500, (target, body[:200], response.text)
    await _read_everything(api, people.root)
    errors = [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]
    assert errors == [], [r.getMessage() for r in errors]
