"""Broken definitions (SPEC E-1): each mutation of a small valid base is
reported with its exact problem code, naming the offending node or edge; and
every problem of a definition is reported, never just the first."""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from flowledger.definitions.problems import DefinitionError, Problem
from flowledger.definitions.validate import load_definition

Doc = dict[str, Any]

BASE: Doc = {
    "key": "base",
    "name": "Base",
    "form": {"fields": [{"key": "amount", "type": "number"}, {"key": "vendor", "type": "string"}]},
    "nodes": [
        {"key": "start", "type": "start"},
        {"key": "review", "type": "approval", "assignees": {"users": ["alice"]}},
        {"key": "gw", "type": "exclusive"},
        {
            "key": "big",
            "type": "trigger",
            "call": {"kind": "http", "url": "https://erp.example/orders/{{instanceId}}"},
            "compensation": {"type": "http", "url": "https://erp.example/undo/{{instanceId}}"},
        },
        {"key": "small", "type": "handle", "assignees": {"roles": ["clerk"]}},
        {"key": "repair", "type": "catch"},
        {"key": "end", "type": "end"},
    ],
    "edges": [
        {"from": "start", "to": "review"},
        {"from": "review", "to": "gw"},
        {"from": "gw", "to": "big", "condition": "form.amount > 1000"},
        {"from": "gw", "to": "small", "default": True},
        {"from": "big", "to": "end"},
        {"from": "big", "to": "repair", "on": "error"},
        {"from": "repair", "to": "end"},
        {"from": "small", "to": "end"},
    ],
}


# ------------------------------------------------------------ mutation helpers


def node(doc: Doc, key: str) -> dict[str, Any]:
    return next(n for n in doc["nodes"] if n["key"] == key)


def edge(doc: Doc, src: str, dst: str) -> dict[str, Any]:
    return next(e for e in doc["edges"] if e["from"] == src and e["to"] == dst)


def drop_edge(doc: Doc, src: str, dst: str) -> None:
    doc["edges"].remove(edge(doc, src, dst))


def insert_after_small(doc: Doc, new: dict[str, Any]) -> None:
    """small -> new -> end instead of small -> end."""
    doc["nodes"].insert(-1, new)
    edge(doc, "small", "end")["to"] = new["key"]
    doc["edges"].append({"from": new["key"], "to": "end"})


def join_branches(doc: Doc, kind: str) -> None:
    """big and small meet at a `kind` join before the end."""
    doc["nodes"].insert(-1, {"key": "j", "type": kind})
    edge(doc, "big", "end")["to"] = "j"
    edge(doc, "small", "end")["to"] = "j"
    doc["edges"].append({"from": "j", "to": "end"})


def setter(path: str, value: Any) -> Callable[[Doc], None]:
    """Set ``nodeKey.attr[.attr...]`` (None deletes)."""
    key, *attrs = path.split(".")

    def mutate(doc: Doc) -> None:
        target = node(doc, key)
        for attr in attrs[:-1]:
            target = target[attr]
        if value is None:
            del target[attrs[-1]]
        else:
            target[attrs[-1]] = copy.deepcopy(value)

    return mutate


def edge_setter(src: str, dst: str, **values: Any) -> Callable[[Doc], None]:
    def mutate(doc: Doc) -> None:
        edge(doc, src, dst).update(values)

    return mutate


def add_nodes_edges(*items: dict[str, Any]) -> Callable[[Doc], None]:
    def mutate(doc: Doc) -> None:
        for item in items:
            if "type" in item:
                doc["nodes"].insert(-1, copy.deepcopy(item))
            else:
                doc["edges"].append(dict(item))

    return mutate


def chain(*steps: Callable[[Doc], None]) -> Callable[[Doc], None]:
    def mutate(doc: Doc) -> None:
        for step in steps:
            step(doc)

    return mutate


def swap_small_for(new: dict[str, Any]) -> Callable[[Doc], None]:
    return lambda doc: insert_after_small(doc, copy.deepcopy(new))


SMS_OK = {"type": "sms", "templateId": "t1", "recipients": ["+100"]}
HANDLE = {"type": "handle", "assignees": {"roles": ["x"]}}


@dataclass(frozen=True)
class Case:
    id: str
    mutate: Callable[[Doc], None]
    codes: set[str]  # exactly the codes reported
    node: str | None = None  # the problem of codes[0]... names this node
    edge: str | None = None  # ... and/or this edge
    field: str | None = None


CASES = [
    Case(
        "duplicate node key",
        add_nodes_edges({"key": "small", **HANDLE}),
        {"duplicate_node_key"},
        node="small",
    ),
    Case(
        "two start nodes",
        add_nodes_edges({"key": "start2", "type": "start"}, {"from": "start2", "to": "review"}),
        {"multiple_start_nodes"},
        node="start2",
    ),
    Case(
        "edge into start",
        add_nodes_edges({"from": "small", "to": "start"}),
        {"start_has_incoming"},
        node="start",
        edge="small->start",
    ),
    Case(
        "edge out of end",
        add_nodes_edges({"from": "end", "to": "review"}),
        {"end_has_outgoing"},
        node="end",
        edge="end->review",
    ),
    Case(
        "dangling edge",
        add_nodes_edges({"from": "small", "to": "ghost"}),
        {"dangling_edge"},
        edge="small->ghost",
    ),
    Case(
        "unreachable node",
        add_nodes_edges({"key": "orphan", **HANDLE}, {"from": "orphan", "to": "end"}),
        {"unreachable_node"},
        node="orphan",
    ),
    Case("dead end", lambda d: drop_edge(d, "small", "end"), {"dead_end"}, node="small"),
    Case(
        "gateway without outgoing edge",
        add_nodes_edges({"key": "gw2", "type": "exclusive"}, {"from": "small", "to": "gw2"}),
        {"gateway_without_outgoing"},
        node="gw2",
    ),
    Case(
        "two default edges",
        add_nodes_edges({"from": "gw", "to": "end", "default": True}),
        {"multiple_default_edges"},
        node="gw",
        edge="gw->end",
    ),
    Case(
        "default edge off a gateway",
        edge_setter("review", "gw", default=True),
        {"default_edge_not_allowed"},
        edge="review->gw",
    ),
    Case(
        "default edge with a condition",
        edge_setter("gw", "small", condition="form.amount < 5"),
        {"default_edge_condition"},
        edge="gw->small",
    ),
    Case(
        "condition off a gateway",
        edge_setter("review", "gw", condition="form.amount > 1"),
        {"condition_not_allowed"},
        edge="review->gw",
    ),
    Case(
        "condition on a parallel edge",
        chain(setter("gw.type", "parallel"), edge_setter("gw", "small", default=False)),
        # its branches end apart, so it is also a fork without its join (issue 17 item 5)
        {"parallel_edge_condition", "fork_without_join"},
        node="gw",
        edge="gw->big",
    ),
    Case(
        "condition syntax error",
        edge_setter("gw", "big", condition="form.amount >"),
        {"bad_condition"},
        edge="gw->big",
    ),
    Case(
        "condition escapes the sandbox",
        edge_setter("gw", "big", condition="__import__('os').system('id')"),
        {"bad_condition"},
        edge="gw->big",
    ),
    Case(
        "bad url template",
        setter("big.call.url", "https://erp.example/{{instanceId"),
        {"bad_template"},
        node="big",
        field="call.url",
    ),
    Case(
        "bad compensation body template",
        setter("big.compensation.bodyTemplate", '{"id": "{{ }}"}'),
        {"bad_template"},
        node="big",
        field="compensation.bodyTemplate",
    ),
    Case(
        "bad header template",
        setter("big.call.headers", {"X-Id": "{{form amount}}"}),
        {"bad_template"},
        node="big",
        field="call.headers.X-Id",
    ),
    Case(
        "url placeholder no call is rendered with",
        setter("big.call.url", "https://erp.example/{{bogus.x}}"),
        {"bad_template"},
        node="big",
        field="call.url",
    ),
    Case(
        "placeholder reaching into a single value",
        setter("big.call.headers", {"X-Id": "{{instanceId.x}}"}),
        {"bad_template"},
        node="big",
        field="call.headers.X-Id",
    ),
    Case(
        "compensation placeholder only calls have",
        setter("big.compensation.bodyTemplate", '{"task": "{{taskId}}"}'),
        {"bad_template"},
        node="big",
        field="compensation.bodyTemplate",
    ),
    Case(
        "parallel join without fork",
        lambda d: join_branches(d, "parallel"),
        {"join_without_fork"},
        node="j",
    ),
    Case(
        "inclusive join without fork",
        lambda d: join_branches(d, "inclusive"),
        {"join_without_fork"},
        node="j",
    ),
    Case(
        "approval without assignees",
        setter("review.assignees", None),
        {"missing_assignees"},
        node="review",
    ),
    Case(
        "handle with empty assignees",
        setter("small.assignees", {"users": [], "roles": []}),
        {"missing_assignees"},
        node="small",
    ),
    Case(
        "cc without assignees",
        swap_small_for({"key": "note", "type": "cc"}),
        {"missing_assignees"},
        node="note",
    ),
    Case(
        "bad assignee expression",
        setter("review.assignees", {"expr": "form.owner ="}),
        {"bad_expression"},
        node="review",
        field="assignees.expr",
    ),
    Case(
        "delay without duration or until",
        swap_small_for({"key": "pause", "type": "delay"}),
        {"delay_missing_wait"},
        node="pause",
    ),
    Case(
        "delay with duration and until",
        swap_small_for({"key": "pause", "type": "delay", "duration": "PT1H", "until": "form.d"}),
        {"delay_ambiguous_wait"},
        node="pause",
    ),
    Case(
        "delay with zero duration",
        swap_small_for({"key": "pause", "type": "delay", "duration": "-PT5S"}),
        {"non_positive_duration"},
        node="pause",
    ),
    Case(
        "delay until gibberish",
        swap_small_for({"key": "pause", "type": "delay", "until": "next tuesday-ish"}),
        {"bad_until"},
        node="pause",
    ),
    Case("trigger without call", setter("big.call", None), {"trigger_missing_call"}, node="big"),
    Case(
        "external approval without dispatch",
        swap_small_for({"key": "ext", "type": "external_approval"}),
        {"external_approval_missing_dispatch"},
        node="ext",
    ),
    Case(
        "subprocess without definitionKey",
        swap_small_for({"key": "child", "type": "subprocess"}),
        {"subprocess_missing_definition_key"},
        node="child",
    ),
    Case(
        "subprocess calling itself",
        swap_small_for({"key": "child", "type": "subprocess", "definitionKey": "base"}),
        {"subprocess_recursion"},
        node="child",
    ),
    Case(
        "bad input mapping",
        swap_small_for(
            {
                "key": "child",
                "type": "subprocess",
                "definitionKey": "other",
                "inputMapping": {"vendor": "form.vendor +"},
            }
        ),
        {"bad_mapping"},
        node="child",
        field="inputMapping.vendor",
    ),
    Case(
        "failure policy on a handle node",
        setter("small.failurePolicy", {"action": "continue"}),
        {"failure_policy_not_allowed"},
        node="small",
    ),
    Case(
        "fallback to a missing node",
        setter("big.failurePolicy", {"action": "fallback", "fallbackNodeKey": "nowhere"}),
        {"fallback_node_missing"},
        node="big",
    ),
    Case(
        "fallback with no target",
        setter("big.failurePolicy", {"action": "fallback"}),
        {"fallback_missing_target"},
        node="big",
    ),
    Case(
        "fallback to itself",
        setter("big.failurePolicy", {"action": "fallback", "fallbackNodeKey": "big"}),
        {"fallback_to_self"},
        node="big",
    ),
    Case(
        "compensate without compensation",
        chain(
            setter("big.compensation", None),
            setter("big.failurePolicy", {"action": "compensate"}),
        ),
        {"compensate_without_compensation"},
        node="big",
    ),
    Case(
        "fallback action with a bad template",
        setter(
            "big.failurePolicy",
            {"action": "fallback", "fallbackAction": {**SMS_OK, "fieldValues": {"a": "{{}}"}}},
        ),
        {"bad_template"},
        node="big",
        field="failurePolicy.fallbackAction.fieldValues.a",
    ),
    Case(
        "error edge to a handle node",
        add_nodes_edges({"from": "review", "to": "small", "on": "error"}),
        {"error_edge_target_not_catch"},
        node="review",
        edge="review->small",
    ),
    Case(
        "two error edges",
        add_nodes_edges({"from": "big", "to": "repair", "on": "error"}),
        {"multiple_error_edges"},
        node="big",
        edge="big->repair",
    ),
    Case(
        "catch without outgoing edge",
        lambda d: drop_edge(d, "repair", "end"),
        {"catch_without_outgoing"},
        node="repair",
    ),
    Case(
        "timeout on a trigger",
        setter("big.timeout", {"after": "PT1H", "action": "notify"}),
        {"timeout_not_allowed"},
        node="big",
    ),
    Case(
        "call on a handle node",
        setter("small.call", {"kind": "http", "url": "https://x.example/"}),
        {"field_not_applicable"},
        node="small",
        field="call",
    ),
    # structural problems found while parsing
    Case("unknown node type", setter("review.type", "aproval"), {"unknown_node_type"}, "review"),
    Case(
        "call without url",
        setter("big.call.url", None),
        {"missing_field"},
        node="big",
        field="call.url",
    ),
    Case(
        "connector call with absolute url",
        setter("big.call", {"kind": "connector", "connectorId": "erp", "url": "https://x/"}),
        {"connector_url_not_relative"},
        node="big",
    ),
    Case(
        "connector call without connectorId",
        setter("big.call", {"kind": "connector", "url": "/orders"}),
        {"connector_id_missing"},
        node="big",
    ),
    Case(
        "sms compensation without template",
        setter("big.compensation", {"type": "sms", "recipients": ["+1"]}),
        {"compensation_incomplete"},
        node="big",
    ),
    Case(
        "updateData compensation without fieldKeys",
        setter("big.compensation", {"type": "updateData", "fieldValues": {"a": "x"}}),
        {"compensation_incomplete"},
        node="big",
    ),
    Case(
        "credential header in a trigger call (X-3: use a connector)",
        setter(
            "big.call",
            {"kind": "http", "url": "https://x.example/", "headers": {"Authorization": "Bearer t"}},
        ),
        {"secret_header_in_definition"},
        node="big",
        field="call.headers.Authorization",
    ),
    Case(
        "api key header in a compensation action",
        setter(
            "big.compensation",
            {"type": "http", "url": "https://x.example/", "headers": {"X-Api-Key": "k"}},
        ),
        {"secret_header_in_definition"},
        node="big",
        field="compensation.headers.X-Api-Key",
    ),
    Case(
        "transfer timeout without target",
        setter("review.timeout", {"after": "PT1H", "action": "transfer"}),
        {"timeout_transfer_target_missing"},
        node="review",
    ),
    Case(
        "misspelled edge field",
        edge_setter("gw", "big", conditon="form.amount > 5"),
        {"unknown_field"},
        edge="gw->big",
        field="conditon",
    ),
    Case(
        "bad timeout duration",
        setter("review.timeout", {"after": "tomorrow", "action": "notify"}),
        {"invalid_value"},
        node="review",
        field="timeout.after",
    ),
]

# definition-level problems: nothing but a field (or nothing) to name
GLOBAL_CASES = [
    Case(
        "no start node",
        chain(lambda d: d["nodes"].pop(0), lambda d: drop_edge(d, "start", "review")),
        {"no_start_node"},
    ),
    Case(
        "no end node",
        chain(
            lambda d: d["nodes"].pop(),
            lambda d: d["nodes"].append({"key": "end", **HANDLE}),
            lambda d: d["edges"].append({"from": "end", "to": "review"}),
        ),
        {"no_end_node"},
    ),
    Case(
        "duplicate form field",
        lambda d: d["form"]["fields"].append({"key": "amount", "type": "string"}),
        {"duplicate_form_field"},
        field="form.fields[2].key",
    ),
    Case(
        "bad definition key",
        lambda d: d.update(key="9 lives"),
        {"invalid_value"},
        field="key",
    ),
]


def _problems(mutate: Callable[[Doc], None]) -> list[Problem]:
    doc = copy.deepcopy(BASE)
    mutate(doc)
    with pytest.raises(DefinitionError) as caught:
        load_definition(doc)
    assert caught.value.problems, "a DefinitionError always carries its problems"
    return caught.value.problems


def test_base_is_valid() -> None:
    assert load_definition(copy.deepcopy(BASE)).key == "base"


def test_the_table_is_big_enough() -> None:
    naming = [case for case in CASES if case.node or case.edge]
    assert len(naming) >= 25
    assert len({code for case in CASES + GLOBAL_CASES for code in case.codes}) >= 40


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_broken_definition(case: Case) -> None:
    problems = _problems(case.mutate)
    assert {p.code for p in problems} == case.codes, [str(p) for p in problems]
    assert case.node or case.edge
    matching = [
        p
        for p in problems
        if (case.node is None or p.node == case.node)
        and (case.edge is None or p.edge == case.edge)
        and (case.field is None or p.field == case.field)
    ]
    assert matching, [(p.code, p.node, p.edge, p.field) for p in problems]
    named = case.edge or case.node
    assert named is not None
    assert all(named in p.message for p in matching), [p.message for p in matching]


@pytest.mark.parametrize("case", GLOBAL_CASES, ids=[case.id for case in GLOBAL_CASES])
def test_broken_definition_as_a_whole(case: Case) -> None:
    problems = _problems(case.mutate)
    assert {p.code for p in problems} == case.codes, [str(p) for p in problems]
    if case.field:
        assert any(p.field == case.field for p in problems)


def test_every_problem_is_reported() -> None:
    def three_problems(doc: Doc) -> None:
        node(doc, "review").pop("assignees")
        edge(doc, "gw", "big")["condition"] = "form.amount >>> 3"
        doc["edges"].append({"from": "small", "to": "ghost"})

    problems = _problems(three_problems)
    found = {(p.code, p.node, p.edge) for p in problems}
    assert found == {
        ("missing_assignees", "review", None),
        ("bad_condition", "gw", "gw->big"),
        ("dangling_edge", None, "small->ghost"),
    }


def test_error_message_lists_the_problems() -> None:
    problems = _problems(lambda d: drop_edge(d, "small", "end"))
    error = DefinitionError(problems)
    assert "dead_end" not in error.message  # messages, not codes
    assert "'small'" in error.message
    assert error.details["problems"][0]["code"] == "dead_end"


def test_yaml_text_reports_the_same_problems() -> None:
    text = """
key: y
name: Y
nodes:
  - {key: start, type: start}
  - {key: t, type: trigger}
  - {key: end, type: end}
edges:
  - {from: start, to: t}
  - {from: t, to: end}
  - {from: t, to: end, on: error}
"""
    with pytest.raises(DefinitionError) as caught:
        load_definition(text)
    found = {(p.code, p.node, p.edge) for p in caught.value.problems}
    assert found == {
        ("trigger_missing_call", "t", None),
        ("error_edge_target_not_catch", "t", "t->end"),
    }
