# ruff: noqa: UP031  (raw JSON texts with % placeholders read better than escaped braces)
"""Hostile JSON and parameters at the API edge (issue 17 items 1, 2, 3, 6, 10;
SPEC A-4): unpaired surrogates, non-finite numbers, deep nesting, huge
integers, bodies over the cap and NUL bytes in query and path parameters
answer a 4xx ``{code, message, field}`` naming the field, write nothing and
log no traceback — on the instance, task, schedule and definition endpoints,
on both backends."""

from __future__ import annotations

import pytest

from tests.api.conftest import Api, People, approval
from tests.hardening.edge import assert_no_traceback, assert_refused, counts, post_raw

SURROGATE = r'"\ud800"'


@pytest.fixture(autouse=True)
def _log(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level("INFO")


async def _task_id(api: Api, people: People) -> int:
    await api.deploy(people.root, approval())
    await api.start(people.ann)
    (task,) = await api.my_tasks(people.mia)
    return int(task["id"])


# ------------------------------------------------------------ item 1


@pytest.mark.parametrize(
    ("path", "raw", "field"),
    [
        ("/instances", '{"definitionKey":"leave","form":{"days":2,"note":%s}}', "body.form.note"),
        ("/instances", '{"definitionKey":%s,"form":{"days":2}}', "body.definitionKey"),
        ("/schedules", '{"definitionKey":"leave","cron":"0 9 * * *","name":%s}', "body.name"),
        ("/definitions", '{"source":%s}', "body.source"),
        ("/definitions", '{"definition":{"key":"x","name":%s}}', "body.definition.name"),
    ],
)
async def test_unpaired_surrogate_is_refused_item1(
    api: Api, people: People, caplog: pytest.LogCaptureFixture, path: str, raw: str, field: str
) -> None:
    await api.deploy(people.root, approval())
    before = await counts(api.db)
    response = await post_raw(api.client, path, raw % SURROGATE, people.root)
    assert_refused(response, 422, "unpaired_surrogate", field)
    assert await counts(api.db) == before
    # every later read still answers
    assert (await api.get("/instances", people.root)).status_code == 200
    assert (await api.get("/schedules", people.root)).status_code == 200
    assert_no_traceback(caplog)


async def test_surrogate_in_task_form_and_key_is_refused_item1(
    api: Api, people: People, caplog: pytest.LogCaptureFixture
) -> None:
    task_id = await _task_id(api, people)
    before = await counts(api.db)
    response = await post_raw(
        api.client, f"/tasks/{task_id}/approve", '{"form":{"note":"\\udfff x"}}', people.mia
    )
    assert_refused(response, 422, "unpaired_surrogate", "body.form.note")
    response = await post_raw(
        api.client, f"/tasks/{task_id}/approve", '{"form":{"\\ud83d":1}}', people.mia
    )
    assert_refused(response, 422, "unpaired_surrogate", "body.form")
    assert await counts(api.db) == before
    # a paired surrogate (an emoji) is fine
    ok = await post_raw(
        api.client, f"/tasks/{task_id}/approve", '{"comment":"\\ud83d\\ude00"}', people.mia
    )
    assert ok.status_code == 200, ok.text
    assert_no_traceback(caplog)


# ------------------------------------------------------------ item 2


@pytest.mark.parametrize("number", ["NaN", "Infinity", "-Infinity", "1e999", "-1e999"])
async def test_non_finite_number_is_refused_item2(
    api: Api, people: People, caplog: pytest.LogCaptureFixture, number: str
) -> None:
    task_id = await _task_id(api, people)
    before = await counts(api.db)
    response = await post_raw(
        api.client,
        "/instances",
        '{"definitionKey":"leave","form":{"days":%s}}' % number,
        people.ann,
    )
    assert_refused(response, 422, "non_finite_number", "body.form.days")
    response = await post_raw(
        api.client, f"/tasks/{task_id}/approve", '{"form":{"x":[1,%s]}}' % number, people.mia
    )
    assert_refused(response, 422, "non_finite_number", "body.form.x.1")
    response = await post_raw(
        api.client,
        "/schedules",
        '{"definitionKey":"leave","cron":"0 9 * * *","form":{"days":%s}}' % number,
        people.root,
    )
    assert_refused(response, 422, "non_finite_number", "body.form.days")
    assert await counts(api.db) == before
    assert_no_traceback(caplog)


# ------------------------------------------------------------ item 3 and 10


@pytest.mark.parametrize("depth", [40, 400, 5000, 100_000])
async def test_deep_nesting_is_refused_before_any_recursion_item3(
    api: Api, people: People, caplog: pytest.LogCaptureFixture, depth: int
) -> None:
    await api.deploy(people.root, approval())
    before = await counts(api.db)
    deep = "[" * depth + "]" * depth
    for path, raw in [
        ("/instances", '{"definitionKey":"leave","form":{"days":2,"x":%s}}' % deep),
        ("/definitions", '{"definition":{"key":"deep","x":%s}}' % deep),
        ("/schedules", '{"definitionKey":"leave","cron":"0 9 * * *","form":{"x":%s}}' % deep),
    ]:
        response = await post_raw(api.client, path, raw, people.root)
        assert_refused(response, 422, "nesting_too_deep", "body")
    assert await counts(api.db) == before
    assert_no_traceback(caplog)


async def test_nesting_inside_strings_does_not_count_item3(api: Api, people: People) -> None:
    await api.deploy(people.root, approval())
    response = await post_raw(
        api.client,
        "/instances",
        '{"definitionKey":"leave","form":{"days":2,"note":"%s"}}' % ("[{" * 200),
        people.ann,
    )
    assert response.status_code == 201, response.text


async def test_body_over_the_cap_is_413_without_reading_it_item3(
    api: Api, people: People, caplog: pytest.LogCaptureFixture
) -> None:
    await api.deploy(people.root, approval())
    before = await counts(api.db)
    big = '{"definitionKey":"leave","form":{"days":2,"note":"%s"}}' % ("a" * (1024 * 1024 + 1))
    response = await post_raw(api.client, "/instances", big, people.ann)
    assert_refused(response, 413, "payload_too_large", "body")

    consumed = 0

    async def stream():  # a chunked body (no Content-Length): stop at the cap
        nonlocal consumed
        for _ in range(64):
            consumed += 1
            yield b"a" * 65_536

    response = await api.client.post(
        "/api/workflows/instances",
        content=stream(),
        headers={**people.ann, "Content-Type": "application/json"},
    )
    assert_refused(response, 413, "payload_too_large", "body")
    assert consumed <= 17  # 16 chunks are the cap, the 17th passes it
    assert await counts(api.db) == before
    assert_no_traceback(caplog)


async def test_form_and_definition_caps_item3(
    api: Api, people: People, caplog: pytest.LogCaptureFixture
) -> None:
    await api.deploy(people.root, approval())
    before = await counts(api.db)
    note = "a" * (65 * 1024)
    response = await api.post(
        "/instances", people.ann, {"definitionKey": "leave", "form": {"days": 2, "note": note}}
    )
    assert_refused(response, 422, "value_too_large", "body.form")
    definition = approval("huge")
    definition["description"] = "d" * (257 * 1024)
    response = await api.post("/definitions", people.root, {"definition": definition})
    assert_refused(response, 422, "value_too_large", "body.definition")
    response = await api.post(
        "/definitions", people.root, {"source": "key: x\n#" + "c" * (257 * 1024)}
    )
    assert_refused(response, 422, "value_too_large", "body.source")
    assert await counts(api.db) == before
    assert_no_traceback(caplog)


@pytest.mark.parametrize("number", ["9" * 4300, "9" * 5000, "-" + "9" * 30, "9223372036854775808"])
async def test_huge_integer_is_422_naming_the_field_item10(
    api: Api, people: People, caplog: pytest.LogCaptureFixture, number: str
) -> None:
    await api.deploy(people.root, approval())
    before = await counts(api.db)
    response = await post_raw(
        api.client, "/instances", '{"definitionKey":"leave","version":%s}' % number, people.ann
    )
    assert_refused(response, 422, "number_out_of_range", "body.version")
    assert await counts(api.db) == before
    assert_no_traceback(caplog)


async def test_invalid_utf8_and_malformed_json_are_422_item10(
    api: Api, people: People, caplog: pytest.LogCaptureFixture
) -> None:
    await api.deploy(people.root, approval())
    before = await counts(api.db)
    bad = b'{"definitionKey":"leave","form":{"note":"\xff\xfe"}}'
    assert_refused(
        await post_raw(api.client, "/instances", bad, people.ann), 422, "validation_error", "body"
    )
    assert_refused(
        await post_raw(api.client, "/instances", '{"definitionKey":', people.ann),
        422,
        "validation_error",
        "body",
    )
    assert await counts(api.db) == before
    assert_no_traceback(caplog)


async def test_refused_body_from_a_caller_without_permission_is_403_item10(
    api: Api, people: People
) -> None:
    """Authorization before validation: hostile or invalid bodies from a
    caller who may not do this answer 403, not 422."""
    await api.deploy(people.root, approval())
    nobody = await api.token("nobody")
    for raw in ['{"definitionKey":"leave","form":{"days":NaN}}', '{"definitionKey":', "[[[[" * 50]:
        response = await post_raw(api.client, "/instances", raw, nobody)
        assert_refused(response, 403, "forbidden", None)
        response = await post_raw(api.client, "/definitions", raw, people.mia)
        assert_refused(response, 403, "forbidden", None)


# ------------------------------------------------------------ item 6


@pytest.mark.parametrize(
    ("path", "params", "field"),
    [
        ("/instances", {"definitionKey": "a\x00b"}, "query.definitionKey"),
        ("/instances", {"initiator": "\x00"}, "query.initiator"),
        ("/tasks", {"assignee": "x\x00"}, "query.assignee"),
        ("/definitions", {"key": "x\x00"}, "query.key"),
        ("/jobs", {"keyword": "x\x00"}, "query.keyword"),
        ("/schedules", {"definitionKey": "\x00"}, "query.definitionKey"),
    ],
)
async def test_nul_in_query_parameter_is_422_item6(
    api: Api, people: People, caplog: pytest.LogCaptureFixture, path: str, params: dict, field: str
) -> None:
    response = await api.get(path, people.root, **params)
    assert_refused(response, 422, "nul_character", field)
    assert_no_traceback(caplog)


@pytest.mark.parametrize(
    ("path", "field"),
    [
        ("/definitions/le%00ave/versions", "path.key"),
        ("/definitions/leave%00/versions/1", "path.key"),
        ("/instances/1%00", "path.instanceId"),
    ],
)
async def test_nul_in_path_parameter_is_422_item6(
    api: Api, people: People, caplog: pytest.LogCaptureFixture, path: str, field: str
) -> None:
    await api.deploy(people.root, approval())
    response = await api.client.get(f"/api/workflows{path}", headers=people.root)
    assert_refused(response, 422, "nul_character", field)
    before = await counts(api.db)
    response = await api.client.post(f"/api/workflows{path}/cancel", headers=people.root, json={})
    assert response.status_code in (404, 405, 422), response.text
    assert await counts(api.db) == before
    assert_no_traceback(caplog)
