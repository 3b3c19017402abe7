"""Valid definitions (SPEC E-1, E-3, C-1, C-4): a full example with every node
type parses from JSON and YAML with no problems; the engine's helper methods;
the sandboxed expression language; text templates."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest

from flowledger.definitions.expressions import (
    CompiledCondition,
    ExpressionError,
    compile_condition,
    evaluate_value,
)
from flowledger.definitions.model import ProcessDefinition
from flowledger.definitions.problems import DefinitionError
from flowledger.definitions.templates import (
    ACTION_VALUES,
    CALL_VALUES,
    dead_placeholder,
    looks_like_json,
    placeholders,
    render,
    validate_template,
)
from flowledger.definitions.validate import (
    load_definition,
    parse_definition,
    validate_definition,
)

FULL_YAML = """
key: purchase
name: Purchase request
description: every node type once
form:
  fields:
    - {key: amount, type: number, required: true}
    - {key: vendor, type: string}
    - {key: priority, type: string, enum: [low, high], label: Priority}
    - {key: needsFinance, type: boolean}
    - {key: dueDate, type: date}
nodes:
  - {key: start, type: start}
  - key: review
    type: approval
    name: Manager review
    assignees: {users: [alice, bob]}
    mode: any
    timeout: {after: PT24H, action: transfer, transferTo: carol}
  - {key: route, type: exclusive}
  - {key: split, type: parallel}
  - key: erp
    type: trigger
    call:
      kind: http
      url: "https://erp.example/orders/{{form.vendor}}"
      httpMethod: post
      headers: {X-Trace: "{{instanceId}}"}
      bodyTemplate: '{"id": "{{instanceId}}", "amount": {{form.amount}}}'
      idempotent: false
      resultMapping: {erpId: response.body.id}
    maxRetries: 3
    compensation:
      type: http
      url: "https://erp.example/orders/{{instanceId}}"
      httpMethod: DELETE
    failurePolicy: {action: compensate, sagaRollback: true, fallbackNodeKey: null,
                    fallbackAction: null}
  - key: crm
    type: trigger
    call: {kind: connector, connectorId: crm, url: /contacts, mode: async}
    onFailure: retry
    compensation: {type: connector, connectorId: crm, url: "/contacts/{{instanceId}}",
                   httpMethod: DELETE}
    failurePolicy:
      action: fallback
      fallbackAction:
        type: email
        recipients: [ops@example.com]
        bodyTemplate: "node {{nodeKey}} failed: {{error}}"
  - {key: join, type: parallel}
  - {key: pick, type: inclusive}
  - key: finance
    type: external_approval
    dispatch: {kind: http, url: "https://finance.example/tasks", idempotent: true}
    dispatchFallback: manual
  - key: vendor_check
    type: subprocess
    definitionKey: vendor_check
    definitionVersion: 2
    inputMapping: {vendor: form.vendor, big: form.amount > 1000}
    outputMapping: {checked: form.ok}
    failurePolicy: {action: fallback, fallbackNodeKey: repair}
  - {key: cool_off, type: delay, duration: PT1H}
  - {key: merge, type: inclusive}
  - {key: wait_due, type: delay, until: form.dueDate}
  - key: repair
    type: catch
    assignees: {roles: [admin]}
  - key: ops
    type: handle
    assignees: {roles: [ops]}
    timeout: {after: P1D, action: notify}
  - key: notice
    type: cc
    assignees: {expr: form.watchers}
  - key: sign_off
    type: approval
    mode: all
    assignees: {roles: [finance]}
  - {key: end, type: end}
edges:
  - {from: start, to: review}
  - {from: review, to: route}
  - {from: route, to: split, condition: "form.amount > 1000"}
  - {from: route, to: notice, default: true}
  - {from: split, to: erp}
  - {from: split, to: crm}
  - {from: erp, to: join}
  - {from: erp, to: repair, on: error}
  - {from: crm, to: join}
  - {from: join, to: pick}
  - {from: pick, to: finance, condition: "form.needsFinance == true"}
  - {from: pick, to: vendor_check, condition: 'contains(lower(form.vendor), "new")'}
  - {from: pick, to: cool_off, default: true}
  - {from: finance, to: merge}
  - {from: vendor_check, to: merge}
  - {from: cool_off, to: merge}
  - {from: merge, to: wait_due}
  - {from: wait_due, to: ops}
  - {from: repair, to: ops}
  - {from: ops, to: notice}
  - {from: notice, to: sign_off}
  - {from: sign_off, to: end}
"""

ALL_TYPES = {
    "start",
    "end",
    "approval",
    "handle",
    "cc",
    "exclusive",
    "parallel",
    "inclusive",
    "delay",
    "trigger",
    "external_approval",
    "subprocess",
    "catch",
}


def _full_json() -> str:
    # the same document as JSON text (yaml.safe_load would read `on` as True)
    return json.dumps(parse_definition(FULL_YAML, fmt="yaml").to_document())


@pytest.fixture(scope="module")
def full() -> ProcessDefinition:
    return load_definition(FULL_YAML)


# ------------------------------------------------------------ full definition


def test_full_yaml_covers_every_node_type_and_has_no_problems(full: ProcessDefinition) -> None:
    assert {node.type for node in full.nodes} == ALL_TYPES
    assert validate_definition(full) == []


@pytest.mark.parametrize("fmt", ["json", "auto"])
def test_full_json_parses_to_the_same_definition(full: ProcessDefinition, fmt: str) -> None:
    from_json = load_definition(_full_json(), fmt=fmt)  # type: ignore[arg-type]
    assert from_json == full
    assert validate_definition(from_json) == []


def test_bytes_and_mapping_sources(full: ProcessDefinition) -> None:
    assert load_definition(FULL_YAML.encode()) == full
    assert load_definition(json.loads(_full_json())) == full


def test_model_fields_use_snake_case_and_aliases(full: ProcessDefinition) -> None:
    erp = full.node("erp")
    assert erp.call is not None and erp.call.http_method == "POST"
    assert erp.call.result_mapping == {"erpId": "response.body.id"}
    assert erp.failure_policy is not None and erp.failure_policy.saga_rollback
    assert erp.compensation is not None and erp.compensation.http_method == "DELETE"
    review = full.node("review")
    assert review.timeout is not None
    assert review.timeout.after == timedelta(hours=24)
    assert review.timeout.transfer_to == "carol"
    assert full.node("cool_off").duration == timedelta(hours=1)
    assert full.node("wait_due").until == "form.dueDate"
    crm = full.node("crm")
    assert crm.failure_policy is not None and crm.failure_policy.fallback_action is not None
    assert crm.failure_policy.fallback_action.recipients == ["ops@example.com"]
    assert full.node("finance").dispatch_fallback == "manual"
    doc = full.to_document()
    assert doc["nodes"][4]["failurePolicy"]["sagaRollback"] is True
    assert doc["edges"][7]["from"] == "erp" and doc["edges"][7]["on"] == "error"


def test_helper_methods(full: ProcessDefinition) -> None:
    assert full.start_node().key == "start"
    assert full.node("pick").type == "inclusive"
    with pytest.raises(KeyError):
        full.node("nowhere")
    assert [e.to for e in full.outgoing("pick")] == ["finance", "vendor_check", "cool_off"]
    assert [e.to for e in full.outgoing("erp")] == ["join"]  # error edge excluded
    error = full.error_edge("erp")
    assert error is not None and error.to == "repair" and error.ref == "erp->repair"
    assert full.error_edge("crm") is None
    assert [e.from_ for e in full.incoming("join")] == ["erp", "crm"]
    assert [e.from_ for e in full.incoming("repair")] == []  # only the error edge enters
    assert [e.from_ for e in full.incoming("ops")] == ["wait_due", "repair"]
    assert full.outgoing("end") == [] and full.incoming("start") == []
    assert full.outgoing("nowhere") == []


def test_constructing_in_python_by_field_name() -> None:
    defn = ProcessDefinition(
        key="tiny",
        name="Tiny",
        nodes=[{"key": "s", "type": "start"}, {"key": "e", "type": "end"}],
        edges=[{"from": "s", "to": "e"}],
    )
    assert validate_definition(defn) == []
    assert defn.outgoing("s")[0].to == "e"


def test_parse_problems_are_all_reported_and_located() -> None:
    doc = json.loads(_full_json())
    doc["nodes"][1]["type"] = "aproval"
    del doc["nodes"][4]["call"]["url"]
    doc["edges"][0]["conditon"] = "x"
    with pytest.raises(DefinitionError) as caught:
        load_definition(doc)
    problems = {(p.code, p.node, p.edge, p.field) for p in caught.value.problems}
    assert problems == {
        ("unknown_node_type", "review", None, "type"),
        ("missing_field", "erp", None, "call.url"),
        ("unknown_field", None, "start->review", "conditon"),
    }
    messages = [p.message for p in caught.value.problems]
    assert "nodes[4] (key 'erp').call.url: field required" in messages
    assert caught.value.code == "definition_invalid"


@pytest.mark.parametrize(
    ("source", "code"),
    [
        ("{not json", "syntax_error"),
        ("key: [unclosed", "syntax_error"),
        ("- a list\n- not a mapping", "not_a_mapping"),
        ("", "not_a_mapping"),
    ],
)
def test_unreadable_documents(source: str, code: str) -> None:
    with pytest.raises(DefinitionError) as caught:
        parse_definition(source)
    assert [p.code for p in caught.value.problems] == [code]


def test_yaml_keeps_on_and_dates_as_strings() -> None:
    text = FULL_YAML.replace("until: form.dueDate", "until: 2030-01-01T09:00:00Z")
    defn = load_definition(text, fmt="yaml")
    assert defn.node("wait_due").until == "2030-01-01T09:00:00Z"
    assert defn.error_edge("erp") is not None


# ------------------------------------------------------------ expressions


FORM: dict[str, Any] = {
    "amount": 1500,
    "vendor": "Acme",
    "tags": ["urgent", "it"],
    "address": {"city": "Paris", "geo": {"lat": 48.8}},
    "approved": True,
}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("form.amount > 1000", True),
        ("form.amount <= 1000", False),
        ('form.vendor == "Acme"', True),
        ("form.vendor != 'Acme'", False),
        ("form.amount > 1000 and form.approved", True),
        ("form.amount < 10 or not form.approved", False),
        ("form.missing == None", True),
        ("form.missing == null", True),
        ("form.missing > 5", False),  # ordering with a missing field is false
        ("form.missing < 5", False),
        ("form.missing.deeper == None", True),
        ('form.address.city == "Paris"', True),
        ("form.address.geo.lat > 48", True),
        ('form["vendor"] == "Acme"', True),
        ('"urgent" in form.tags', True),
        ('"x" not in form.tags', True),
        ('form.vendor in ["Acme", "Globex"]', True),
        ("'a' in form.missing", False),
        ("form.amount * 2 - 1000 == 2000", True),
        ("form.amount / 3 == 500", True),
        ("form.amount % 7 == 2", True),
        ("2 ** 10 == 1024", True),
        ("len(form.tags) == 2", True),
        ("len(form.missing) == 0", True),
        ('lower(form.vendor) == "acme"', True),
        ('upper(form.vendor) == "ACME"', True),
        ('contains(form.vendor, "cm")', True),
        ('contains(form.tags, "it")', True),
        ('contains(form.missing, "x")', False),
        ("true and not false", True),
        ("True", True),
        ("system.user == 'bob'", True),
        ("system.nothing == None", True),
        ("form.tags[0] == 'urgent'", True),
        ("form.tags[9] == None", True),
        ("'big' if form.amount > 1000 else 'small'", True),
    ],
)
def test_conditions(text: str, expected: bool) -> None:
    condition = compile_condition(text)
    assert isinstance(condition, CompiledCondition)
    assert condition.evaluate(FORM, {"user": "bob"}) is expected


def test_values() -> None:
    assert evaluate_value("form.vendor", FORM, None) == "Acme"
    assert evaluate_value("form.address", FORM, None) == {"city": "Paris", "geo": {"lat": 48.8}}
    assert evaluate_value("form.amount + 1", FORM, None) == 1501
    assert evaluate_value("form.nope", FORM, None) is None
    assert evaluate_value("system.initiator", {}, {"initiator": "eve"}) == "eve"
    assert evaluate_value('"fixed"', {}, None) == "fixed"


def test_dict_methods_are_not_reachable_as_fields() -> None:
    assert evaluate_value("form.items", {"items": 3}, None) == 3
    assert evaluate_value("form.keys", {}, None) is None


@pytest.mark.parametrize(
    "text",
    [
        "__import__('os')",
        "__import__('os').system('true')",
        "form.__class__",
        "().__class__.__bases__",
        "form.__class__.__mro__",
        "open('/etc/passwd')",
        "eval('1')",
        "form.vendor.upper()",
        "lambda: 1",
        "[x for x in form.tags]",
        "{'a': 1}",
        "f'{form.vendor}'",
        "9 ** 9999999",
        "2 ** 10000",
        "x = 1",
        "form.amount >",
        "",
        "   ",
        "unknown_name > 1",
        "len(form.tags, 2)",
        "len(x=form.tags)",
        "form.tags[0:1]",
        "1j",
        "'x' * 10" + "0" * 2000,
    ],
)
def test_sandbox_refuses_at_compile_time(text: str) -> None:
    with pytest.raises(ExpressionError):
        compile_condition(text)


@pytest.mark.parametrize(
    "text",
    [
        "form.n ** form.n",  # huge power from data
        "form.big ** 500",  # result too large
        "form.s * 1000000",  # huge string
        "form.vendor % 1",  # string formatting refused
        "form.vendor > 1",  # type error
        "form.n / 0",
        "form.vendor.length",  # attribute of a string
    ],
)
def test_sandbox_refuses_at_run_time(text: str) -> None:
    condition = compile_condition(text)
    with pytest.raises(ExpressionError):
        condition.evaluate({"n": 10**6, "big": 2**64, "s": "abc", "vendor": "Acme"})


@pytest.mark.parametrize(
    "text",
    [
        "'%0999999999d' % 1",  # string formatting refused
        "1 / 0",
        "form.a > 1 / 0",
        '"a" > 1',
        "len(5)",
        "[1][0].x",
        "form.a if form.b else 1 // 0",  # also in a branch the data may not take
    ],
)
def test_parts_that_read_no_data_and_fail_are_refused_at_compile_issue31(text: str) -> None:
    with pytest.raises(ExpressionError, match="always fails"):
        compile_condition(text)


def test_compile_is_cached() -> None:
    assert compile_condition("form.a == 1") is compile_condition("form.a == 1")


# ------------------------------------------------------------ templates

VALUES: dict[str, Any] = {
    "instanceId": 42,
    "nodeKey": "erp",
    "error": "boom: 500",
    "form": {"amount": 1500, "vendor": "A&B Co/1", "ok": True, "none": None, "tags": ["a"]},
    "system": {"now": "2030-01-01"},
    "formData": {"vendor": "acme"},
}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("id={{instanceId}}", "id=42"),
        ("{{ form.amount }}", "1500"),
        ("{{nodeKey}}: {{error}}", "erp: boom: 500"),
        ("{{form.missing}}|{{nothing.at.all}}", "|"),
        ("{{form.ok}} {{form.none}}", "true "),
        ("{{form.tags}}", '["a"]'),
        ("{{form.tags.0}}", "a"),
        ("{{system.now}}/{{formData.vendor}}", "2030-01-01/acme"),
        ('{"a": {"b": "{{form.vendor}}"}}', '{"a": {"b": "A&B Co/1"}}'),
        ("no placeholders", "no placeholders"),
    ],
)
def test_render(text: str, expected: str) -> None:
    validate_template(text)
    assert render(text, VALUES) == expected


def test_render_url_encodes_each_value() -> None:
    url = "https://x.example/v/{{form.vendor}}?e={{error}}&id={{instanceId}}"
    assert render(url, VALUES, url_encode=True) == (
        "https://x.example/v/A%26B%20Co%2F1?e=boom%3A%20500&id=42"
    )


def test_render_flat_dotted_keys() -> None:
    assert render("{{form.amount}}", {"form.amount": 7}) == "7"


def test_placeholders() -> None:
    text = "{{instanceId}} {{ form.amount }} {{instanceId}} {{system.now}}"
    assert placeholders(text) == ["instanceId", "form.amount", "system.now"]


@pytest.mark.parametrize(
    "text",
    ["{{instanceId", "a {{ }} b", "{{}}", "{{form.a {{form.b}}", "{{form amount}}", "{{1abc}}"],
)
def test_bad_templates(text: str) -> None:
    with pytest.raises(ExpressionError):
        validate_template(text)


@pytest.mark.parametrize(
    ("path", "names", "dead"),
    [
        ("instanceId", CALL_VALUES, None),
        ("traceId", CALL_VALUES, None),
        ("form", CALL_VALUES, None),
        ("form.amount", CALL_VALUES, None),
        ("form.amount.currency", CALL_VALUES, None),  # into an object field's value
        ("error", ACTION_VALUES, None),
        ("form.undeclared", CALL_VALUES, None),  # not checked against the form's fields
        ("bogus.x", CALL_VALUES, "unknown placeholder {{bogus.x}}"),
        ("taskId", ACTION_VALUES, "unknown placeholder {{taskId}}"),
        ("error", CALL_VALUES, "unknown placeholder {{error}}"),
        ("nodeKey.x", CALL_VALUES, "nodeKey is a single value"),
    ],
)
def test_a_placeholder_no_value_can_fill_is_dead_E1(
    path: str, names: tuple[str, ...], dead: str | None
) -> None:
    why = dead_placeholder(path, names)
    assert (why is None) if dead is None else (why is not None and dead in why), why


def test_render_json_escapes_each_value_C4_X6() -> None:
    # a value with quotes or backslashes stays inside its JSON string and
    # cannot add keys to the body
    values = {"form": {"note": 'x", "admin": true, "y": "\\', "amount": 12.5}}
    body = render('{"note": "{{form.note}}", "amount": {{form.amount}}}', values, json_escape=True)
    assert json.loads(body) == {"note": 'x", "admin": true, "y": "\\', "amount": 12.5}
    assert looks_like_json(' {"a": 1}') and looks_like_json("[1]")
    assert not looks_like_json("plain {{form.note}}")
