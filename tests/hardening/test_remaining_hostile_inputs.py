"""Issue 31 item 6 (SPEC E-1, E-9): the remaining hostile inputs, each a 422
naming the field, with nothing written and no traceback, through the real
deploy and schedule routes, on both backends:

* a definition source (YAML or JSON text, or the parsed document) holding a
  lone surrogate, NUL, ``.nan`` / ``.inf``, an integer past 64 bits,
  ``!!binary`` that is not UTF-8, a set, a date or a non-text key;
* a compensation or fallback-action URL whose scheme is not http(s);
* a resultMapping, condition or mapping the evaluator would refuse at run
  time;
* a delay ``until`` outside the representable range once in UTC;
* a cron rule that never fires;
* a loop without a wait state, named by the nodes on it.

Every case here is listed in ``docs/limits.md``."""

from __future__ import annotations

from typing import Any

import pytest

from flowledger.definitions.problems import DefinitionError
from flowledger.engine import Engine
from tests.api.conftest import Api, People, approval
from tests.hardening.edge import assert_no_traceback, assert_refused, counts


@pytest.fixture(autouse=True)
def _log(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level("INFO")


def _yaml(
    description: str = "plain", name: str = "mgr", enum: str = "[1, 2]", extra: str = ""
) -> str:
    return f"""\
key: leave
name: leave request
description: {description}
form:
  fields:
    - key: days
      type: integer
      enum: {enum}
{extra}nodes:
  - key: start
    type: start
  - key: manager
    type: approval
    name: {name}
    assignees: {{users: [mia]}}
  - key: end
    type: end
edges:
  - {{from: start, to: manager}}
  - {{from: manager, to: end}}
"""


# (id, source text, problem code, node, field)
SOURCES: list[tuple[str, str, str, str | None, str]] = [
    ("yaml-lone-high-surrogate", _yaml('"\\ud800"'), "unpaired_surrogate", None, "description"),
    (
        "yaml-lone-low-surrogate-in-node",
        _yaml(name='"mgr \\udc00"'),
        "unpaired_surrogate",
        "manager",
        "name",
    ),
    (
        "yaml-surrogate-in-key",
        _yaml(extra='  "\\ud800x": 1\n'),
        "unpaired_surrogate",
        None,
        "form.\\ud800x",
    ),
    ("yaml-nan", _yaml(enum="[.nan]"), "non_finite_number", None, "form.fields[0].enum[0]"),
    ("yaml-inf", _yaml(enum="[1, .inf]"), "non_finite_number", None, "form.fields[0].enum[1]"),
    ("yaml-minus-inf", _yaml("-.inf"), "non_finite_number", None, "description"),
    ("yaml-binary-not-utf8", _yaml("!!binary /w=="), "binary_not_utf8", None, "description"),
    ("yaml-nul", _yaml('"a\\0b"'), "nul_character", None, "description"),
    # a report quoting a key escapes it, so the answer and its audit row can be written
    ("yaml-nul-in-key", _yaml(extra='  "m\\0": 1\n'), "nul_character", None, "form.m\\x00"),
    ("yaml-nul-in-node", _yaml(name='"m\\x00"'), "nul_character", "manager", "name"),
    (
        "yaml-integer-past-64-bits",
        _yaml(enum="[9223372036854775808]"),
        "number_out_of_range",
        None,
        "form.fields[0].enum[0]",
    ),
    (
        "yaml-huge-negative-integer",
        _yaml(enum="[-99999999999999999999999999]"),
        "number_out_of_range",
        None,
        "form.fields[0].enum[0]",
    ),
    ("yaml-set", _yaml(enum="!!set {a, b}"), "unsupported_value", None, "form.fields[0].enum"),
    ("yaml-timestamp", _yaml("!!timestamp 2026-01-01"), "unsupported_value", None, "description"),
    ("yaml-int-key", _yaml(extra="  1: x\n"), "unsupported_value", None, "form.1"),
    ("yaml-null-key", _yaml(extra="  null: x\n"), "unsupported_value", None, "form.None"),
    (
        "json-text-nan",
        '{"key": "leave", "name": "l", "description": NaN, "nodes": [], "edges": []}',
        "non_finite_number",
        None,
        "description",
    ),
    (
        "json-text-1e999",
        '{"key": "leave", "name": "l", "description": -1e999, "nodes": [], "edges": []}',
        "non_finite_number",
        None,
        "description",
    ),
    (
        "json-text-lone-surrogate",
        '{"key": "leave", "name": "l", "description": "\\udc00", "nodes": [], "edges": []}',
        "unpaired_surrogate",
        None,
        "description",
    ),
    (
        "json-text-nul",
        '{"key": "leave", "name": "l\\u0000", "nodes": [], "edges": []}',
        "nul_character",
        None,
        "name",
    ),
]


def _problem(body: dict[str, Any], code: str) -> dict[str, Any]:
    found = [p for p in body["problems"] if p["code"] == code]
    assert found, body
    return found[0]


async def _refused(
    api: Api, people: People, caplog: pytest.LogCaptureFixture, body: dict[str, Any]
) -> dict[str, Any]:
    before = await counts(api.db)
    response = await api.post("/definitions", people.root, body)
    refused = assert_refused(response, 422, "definition_invalid", None)
    assert await counts(api.db) == before
    assert_no_traceback(caplog)
    return dict(refused)


@pytest.mark.parametrize(
    ("name", "source", "code", "node", "field"), SOURCES, ids=[s[0] for s in SOURCES]
)
async def test_hostile_definition_source_is_refused_naming_the_field(
    api: Api,
    people: People,
    caplog: pytest.LogCaptureFixture,
    name: str,
    source: str,
    code: str,
    node: str | None,
    field: str,
) -> None:
    body = await _refused(api, people, caplog, {"source": source})
    problem = _problem(body, code)
    assert problem["field"] == field, problem
    assert problem["node"] == node, problem


async def test_hostile_parsed_definition_is_refused_naming_the_field(
    api: Api, people: People, engine: Engine, caplog: pytest.LogCaptureFixture
) -> None:
    """A parsed document: the API edge refuses NUL in the body already; a
    document handed to the engine (CLI, Python callers) meets the same walk
    as a source text."""
    definition = approval()
    definition["nodes"][1]["name"] = "boss\u0000"
    before = await counts(api.db)
    response = await api.post("/definitions", people.root, {"definition": definition})
    assert_refused(response, 422, "validation_error", "body.definition")
    definition["description"] = float("nan")
    with pytest.raises(DefinitionError) as refused:
        await engine.deploy(definition, actor="root", tenant="default")
    found = {(p.code, p.node, p.field) for p in refused.value.problems}
    assert found == {
        ("nul_character", "manager", "name"),
        ("non_finite_number", None, "description"),
    }
    assert await counts(api.db) == before
    assert_no_traceback(caplog)


async def test_sound_yaml_values_still_deploy(api: Api, people: People) -> None:
    """UTF-8 ``!!binary`` is the text it spells; a YAML surrogate pair is its
    one character; finite floats and 64-bit integers are fine."""
    for description, enum in (
        ("!!binary aGk=", "[1, 2]"),
        ('"\\ud83d\\ude00"', "[1.5, -9223372036854775808]"),
    ):
        response = await api.post(
            "/definitions", people.root, {"source": _yaml(description, enum=enum)}
        )
        assert response.status_code == 201, response.text
    versions = await api.get("/definitions/leave/versions/1", people.root)
    assert versions.json()["source"]["description"] == "hi"
    second = await api.get("/definitions/leave/versions/2", people.root)
    assert second.json()["source"]["description"] == "\U0001f600"


# ------------------------------------------------------------------ URLs


def _trigger(**node: Any) -> dict[str, Any]:
    return {
        "key": "call",
        "name": "call",
        "form": {"fields": [{"key": "x", "type": "string"}]},
        "nodes": [
            {"key": "start", "type": "start"},
            {
                "key": "t",
                "type": "trigger",
                "call": {"kind": "http", "url": "https://erp.example/x"},
                **node,
            },
            {"key": "end", "type": "end"},
        ],
        "edges": [{"from": "start", "to": "t"}, {"from": "t", "to": "end"}],
    }


def _compensation(url: str) -> dict[str, Any]:
    return _trigger(compensation={"type": "http", "url": url})


def _fallback(url: str) -> dict[str, Any]:
    action = {"type": "http", "url": url}
    return _trigger(failurePolicy={"action": "fallback", "fallbackAction": action})


URLS = [
    ("compensation-ftp", _compensation("ftp://erp.example/undo"), "url_scheme_not_allowed"),
    ("compensation-file", _compensation("file:///etc/passwd"), "url_scheme_not_allowed"),
    ("compensation-gopher", _compensation("gopher://erp.example:70/"), "url_scheme_not_allowed"),
    (
        "compensation-placeholder-scheme",
        _compensation("{{form.x}}://erp.example/undo"),
        "url_scheme_not_allowed",
    ),
    (
        "compensation-placeholder-host",
        _compensation("https://{{form.x}}/undo"),
        "url_placeholder_in_origin",
    ),
    ("fallback-javascript", _fallback("javascript:alert(1)"), "url_scheme_not_allowed"),
    ("fallback-data", _fallback("data:text/plain,hi"), "url_scheme_not_allowed"),
]
URL_FIELDS = {"compensation": "compensation.url", "fallback": "failurePolicy.fallbackAction.url"}


@pytest.mark.parametrize(("name", "definition", "code"), URLS, ids=[u[0] for u in URLS])
async def test_action_url_scheme_other_than_http_is_refused(
    api: Api,
    people: People,
    caplog: pytest.LogCaptureFixture,
    name: str,
    definition: dict[str, Any],
    code: str,
) -> None:
    body = await _refused(api, people, caplog, {"definition": definition})
    problem = _problem(body, code)
    assert (problem["node"], problem["field"]) == ("t", URL_FIELDS[name.split("-")[0]])


# ------------------------------------------------------------ expressions


def _mapped(text: str, where: str = "call") -> dict[str, Any]:
    if where == "call":
        call = {"kind": "http", "url": "https://erp.example/x", "resultMapping": {"x": text}}
        return _trigger(call=call)
    dispatch = {"kind": "http", "url": "https://erp.example/x", "resultMapping": {"x": text}}
    definition = _trigger()
    definition["nodes"][1] = {"key": "t", "type": "external_approval", "dispatch": dispatch}
    return definition


def _gateway(condition: str) -> dict[str, Any]:
    definition = approval("cond")
    definition["nodes"].insert(1, {"key": "gw", "type": "exclusive"})
    definition["edges"] = [
        {"from": "start", "to": "gw"},
        {"from": "gw", "to": "manager", "condition": condition},
        {"from": "gw", "to": "end", "default": True},
        {"from": "manager", "to": "end"},
    ]
    return definition


def _input_mapping(text: str) -> dict[str, Any]:
    definition = approval("parent")
    definition["nodes"][1] = {
        "key": "sub",
        "type": "subprocess",
        "definitionKey": "child",
        "inputMapping": {"x": text},
    }
    definition["edges"] = [{"from": "start", "to": "sub"}, {"from": "sub", "to": "end"}]
    return definition


# (id, definition, code, node, edge, field)
EXPRESSIONS = [
    (
        "mapping-unknown-name",
        _mapped("resp.body.id"),
        "bad_mapping",
        "t",
        None,
        "call.resultMapping.x",
    ),
    ("mapping-call", _mapped("open(response)"), "bad_mapping", "t", None, "call.resultMapping.x"),
    ("mapping-lambda", _mapped("(lambda: 1)()"), "bad_mapping", "t", None, "call.resultMapping.x"),
    (
        "mapping-keyword",
        _mapped("len(response, x=1)"),
        "bad_mapping",
        "t",
        None,
        "call.resultMapping.x",
    ),
    (
        "mapping-constant-fails",
        _mapped('response.body.n + ("a" - 1)'),
        "bad_mapping",
        "t",
        None,
        "call.resultMapping.x",
    ),
    (
        "dispatch-mapping-comprehension",
        _mapped("[x for x in response.body]", "dispatch"),
        "bad_mapping",
        "t",
        None,
        "dispatch.resultMapping.x",
    ),
    (
        "condition-type-error",
        _gateway('"a" > 1'),
        "bad_condition",
        "gw",
        "gw->manager",
        "condition",
    ),
    (
        "condition-division-by-zero",
        _gateway("form.days > 1 / 0"),
        "bad_condition",
        "gw",
        "gw->manager",
        "condition",
    ),
    (
        "condition-len-of-number",
        _gateway("len(5) > 0"),
        "bad_condition",
        "gw",
        "gw->manager",
        "condition",
    ),
    (
        "condition-string-format",
        _gateway("'%d' % 1 == form.note"),
        "bad_condition",
        "gw",
        "gw->manager",
        "condition",
    ),
    (
        "input-mapping-floor-division-by-zero",
        _input_mapping("form.days + 1 // 0"),
        "bad_mapping",
        "sub",
        None,
        "inputMapping.x",
    ),
]


@pytest.mark.parametrize(
    ("name", "definition", "code", "node", "edge", "field"),
    EXPRESSIONS,
    ids=[e[0] for e in EXPRESSIONS],
)
async def test_expression_the_evaluator_refuses_is_refused_at_deploy(
    api: Api,
    people: People,
    caplog: pytest.LogCaptureFixture,
    name: str,
    definition: dict[str, Any],
    code: str,
    node: str,
    edge: str | None,
    field: str,
) -> None:
    body = await _refused(api, people, caplog, {"definition": definition})
    problem = _problem(body, code)
    assert (problem["node"], problem["edge"], problem["field"]) == (node, edge, field), problem


# ------------------------------------------------------------------ until


def _until(until: str) -> dict[str, Any]:
    definition = approval("wait")
    definition["nodes"][1] = {"key": "d", "type": "delay", "until": until}
    definition["edges"] = [{"from": "start", "to": "d"}, {"from": "d", "to": "end"}]
    return definition


UNTILS = [
    "9999-12-31T23:00:00-05:00",  # past year 9999 once in UTC
    "0001-01-01T00:30:00+01:00",  # before year 1 once in UTC
    "9999-12-31T23:59:59",  # no zone: UTC, a day short of the end
    "0001-01-01T00:00:00+00:00",
]


@pytest.mark.parametrize("until", UNTILS)
async def test_until_outside_the_representable_range_is_refused(
    api: Api, people: People, caplog: pytest.LogCaptureFixture, until: str
) -> None:
    body = await _refused(api, people, caplog, {"definition": _until(until)})
    problem = _problem(body, "until_out_of_range")
    assert (problem["node"], problem["field"]) == ("d", "until")


async def test_until_within_range_still_deploys(api: Api, people: People) -> None:
    for until in ("9999-12-01T00:00:00+14:00", "2030-01-01T00:00:00-12:00", "form.due"):
        assert (await api.deploy(people.root, _until(until)))["key"] == "wait"


# ------------------------------------------------------------------- cron


@pytest.mark.parametrize(
    "cron", ["0 0 30 2 *", "0 0 31 4 *", "0 12 31 2,4,6,9,11 *", "0 0 30,31 2 *"]
)
async def test_cron_that_never_fires_is_refused(
    api: Api, people: People, caplog: pytest.LogCaptureFixture, cron: str
) -> None:
    await api.deploy(people.root, approval())
    before = await counts(api.db)
    response = await api.post(
        "/schedules", people.root, {"definitionKey": "leave", "cron": cron, "form": {"days": 1}}
    )
    body = assert_refused(response, 422, "schedule_invalid", "cron")
    assert "never fires" in body["message"]
    assert await counts(api.db) == before
    assert_no_traceback(caplog)
    leap = await api.post(
        "/schedules",
        people.root,
        {"definitionKey": "leave", "cron": "0 0 29 2 *", "form": {"days": 1}},
    )
    assert leap.status_code == 201, leap.text  # once in four years still fires


# ------------------------------------------------------------------ loops


def _loop_before_end() -> dict[str, Any]:
    """x and y loop; "done" and "end" follow the loop but are not on it (the
    old report named "done", the first of every node it could not peel off)."""
    return {
        "key": "spin",
        "name": "spin",
        "nodes": [
            {"key": "start", "type": "start"},
            {"key": "x", "type": "exclusive"},
            {"key": "y", "type": "exclusive"},
            {"key": "done", "type": "exclusive"},
            {"key": "end", "type": "end"},
        ],
        "edges": [
            {"from": "start", "to": "x"},
            {"from": "x", "to": "y", "default": True},
            {"from": "x", "to": "done", "condition": "form.stop == 1"},
            {"from": "y", "to": "x", "default": True},
            {"from": "y", "to": "done", "condition": "form.stop == 2"},
            {"from": "done", "to": "end", "default": True},
        ],
    }


async def test_loop_without_wait_is_named_by_its_nodes(
    api: Api, people: People, caplog: pytest.LogCaptureFixture
) -> None:
    body = await _refused(api, people, caplog, {"definition": _loop_before_end()})
    problems = [p for p in body["problems"] if p["code"] == "cycle_without_wait"]
    assert len(problems) == 1, body
    problem = problems[0]
    assert (problem["node"], problem["edge"]) == ("x", "y->x"), problem
    assert "x -> y -> x" in problem["message"]
    assert "done" not in problem["message"] and "end" not in problem["message"]


async def test_until_from_the_form_outside_the_range_fails_the_node_not_the_step(
    api: Api, people: People, engine: Engine, caplog: pytest.LogCaptureFixture
) -> None:
    """The same range at run time, for an ``until`` read from the form: the
    delay fails as ``bad_delay`` instead of an OverflowError out of the step."""
    definition = _until("form.due")
    definition["form"]["fields"].append({"key": "due", "type": "string"})
    await api.deploy(people.root, definition)
    iid = await engine.start(
        "wait", form={"days": 1, "due": "9999-12-31T23:00:00-05:00"}, initiator="root"
    )
    found = await api.get(f"/instances/{iid}", people.root)
    assert found.status_code == 200, found.text
    failed = [t for t in found.json()["trace"] if t["event"] == "node_failed"]
    assert [(t["nodeKey"], t["detail"]["code"]) for t in failed] == [("d", "bad_delay")]
    assert "outside the representable range" in failed[0]["detail"]["error"]
    assert found.json()["tasks"] == []  # no delay task, no wake job at an unstorable time
    assert_no_traceback(caplog)
