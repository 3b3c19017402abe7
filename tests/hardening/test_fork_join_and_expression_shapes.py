"""Issue 17 item 5 (SPEC E-1, E-4), the rest of it: at deploy, a parallel or
inclusive fork without its join, and the expression shapes the run-time
sandbox would refuse whatever the data (power towers, huge repetition,
dunder access) in conditions, resultMapping, input/output mappings and
assignee expressions — each a 422 ``definition_invalid`` whose problem names
the node or edge and the field; nothing written, no traceback. Sound
variants still deploy. Both backends."""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.conftest import Api, People
from tests.hardening.edge import assert_no_traceback, assert_refused, counts


@pytest.fixture(autouse=True)
def _log(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level("INFO")


def _human(key: str) -> dict[str, Any]:
    return {"key": key, "type": "approval", "assignees": {"users": ["mia"]}}


def _flow(key: str, nodes: list[dict[str, Any]], edges: list[tuple[str, str]]) -> dict[str, Any]:
    return {
        "key": key,
        "name": key,
        "form": {"fields": [{"key": "amount", "type": "number"}]},
        "nodes": [{"key": "start", "type": "start"}, *nodes, {"key": "end", "type": "end"}],
        "edges": [{"from": a, "to": b} for a, b in edges],
    }


def _split(kind: str, edges: list[tuple[str, str]], extra: tuple[str, ...] = ()) -> dict:
    """start -> split (``kind``) -> a, b (approvals) … with ``edges`` after."""
    nodes = [{"key": "split", "type": kind}, _human("a"), _human("b")]
    nodes += [{"key": k, "type": kind if k == "join" else "exclusive"} for k in extra]
    nodes += [_human("c")] if any("c" in e for e in edges) else []
    return _flow(
        f"fork-{kind}",
        nodes,
        [("start", "split"), ("split", "a"), ("split", "b"), *edges],
    )


FORKS = [
    ("parallel-ends-apart", _split("parallel", [("a", "end"), ("b", "end")]), "split"),
    ("inclusive-ends-apart", _split("inclusive", [("a", "end"), ("b", "end")]), "split"),
    (
        # a and b meet at the join, c runs to the end: the join waits for c forever
        "parallel-one-branch-escapes",
        _split(
            "parallel",
            [("split", "c"), ("a", "join"), ("b", "join"), ("c", "end"), ("join", "end")],
            ("join",),
        ),
        "split",
    ),
    (
        # the branches meet at an exclusive gateway, which joins nothing
        "parallel-meets-at-exclusive",
        _split("parallel", [("a", "gw"), ("b", "gw"), ("gw", "end")], ("gw",)),
        "split",
    ),
]


@pytest.mark.parametrize(("name", "definition", "node"), FORKS, ids=[f[0] for f in FORKS])
async def test_fork_without_its_join_is_refused_item5(
    api: Api,
    people: People,
    caplog: pytest.LogCaptureFixture,
    name: str,
    definition: dict[str, Any],
    node: str,
) -> None:
    before = await counts(api.db)
    response = await api.post("/definitions", people.root, {"definition": definition})
    body = assert_refused(response, 422, "definition_invalid", None)
    found = [p for p in body["problems"] if p["code"] == "fork_without_join"]
    assert [p["node"] for p in found] == [node], body
    assert await counts(api.db) == before
    assert_no_traceback(caplog)


async def test_forks_with_their_joins_still_deploy_item5(api: Api, people: People) -> None:
    joined = {"from": "join", "to": "end"}
    for kind in ("parallel", "inclusive"):
        plain = _split(kind, [("a", "join"), ("b", "join"), ("join", "end")], ("join",))
        plain["key"] = f"ok-{kind}"
        assert (await api.deploy(people.root, plain))["key"] == plain["key"]
    # nested: the inner fork joins first, then the outer one
    nested = _flow(
        "nested",
        [
            {"key": "outer", "type": "parallel"},
            {"key": "inner", "type": "parallel"},
            _human("a"),
            _human("b"),
            _human("c"),
            {"key": "innerJoin", "type": "parallel"},
            {"key": "join", "type": "parallel"},
        ],
        [
            ("start", "outer"),
            ("outer", "inner"),
            ("outer", "c"),
            ("inner", "a"),
            ("inner", "b"),
            ("a", "innerJoin"),
            ("b", "innerJoin"),
            ("innerJoin", "join"),
            ("c", "join"),
        ],
    )
    nested["edges"].append(joined)
    await api.deploy(people.root, nested)
    # a branch with an exception path to a catch still reaches the join normally
    caught = _split("parallel", [("a", "join"), ("b", "join"), ("join", "end")], ("join",))
    caught["key"] = "caught"
    caught["nodes"][2] = {
        "key": "a",
        "type": "trigger",
        "call": {"kind": "http", "url": "https://erp.example/x"},
    }
    caught["nodes"].append({"key": "repair", "type": "catch"})
    caught["edges"] += [{"from": "a", "to": "repair", "on": "error"}]
    caught["edges"] += [{"from": "repair", "to": "end"}]
    await api.deploy(people.root, caught)


# ------------------------------------------------------------ expression shapes


def _gateway(condition: str) -> dict[str, Any]:
    defn = _flow("cond", [{"key": "gw", "type": "exclusive"}, _human("a")], [("start", "gw")])
    defn["edges"] += [
        {"from": "gw", "to": "a", "condition": condition},
        {"from": "gw", "to": "end", "default": True},
        {"from": "a", "to": "end"},
    ]
    return defn


def _result_mapping(text: str) -> dict[str, Any]:
    call = {"kind": "http", "url": "https://erp.example/x", "resultMapping": {"erpId": text}}
    return _flow(
        "mapped",
        [{"key": "t", "type": "trigger", "call": call}],
        [("start", "t"), ("t", "end")],
    )


def _input_mapping(text: str) -> dict[str, Any]:
    node = {
        "key": "sub",
        "type": "subprocess",
        "definitionKey": "child",
        "inputMapping": {"x": text},
    }
    return _flow("parent", [node], [("start", "sub"), ("sub", "end")])


def _assignees(text: str) -> dict[str, Any]:
    node = {"key": "a", "type": "approval", "assignees": {"expr": text}}
    return _flow("who", [node], [("start", "a"), ("a", "end")])


SHAPES = [
    ("power-tower", _gateway("9**9**9**9 > 1"), "bad_condition", None, "gw->a", "condition"),
    ("repetition", _gateway('"a" * 10**9 == form.s'), "bad_condition", None, "gw->a", "condition"),
    (
        "data-power",
        _gateway("form.amount ** 10**9 > 1"),
        "bad_condition",
        None,
        "gw->a",
        "condition",
    ),
    (
        "mapping-dunder",
        _result_mapping("response.body.__class__"),
        "bad_mapping",
        "t",
        None,
        "call.resultMapping.erpId",
    ),
    (
        "mapping-tower",
        _result_mapping("9**9**9**9"),
        "bad_mapping",
        "t",
        None,
        "call.resultMapping.erpId",
    ),
    (
        "mapping-repetition",
        _result_mapping('["x"] * 10**8'),
        "bad_mapping",
        "t",
        None,
        "call.resultMapping.erpId",
    ),
    (
        "input-repetition",
        _input_mapping('"a" * 10**9'),
        "bad_mapping",
        "sub",
        None,
        "inputMapping.x",
    ),
    (
        "assignee-tower",
        _assignees("2 ** 2 ** 2 ** 2 ** 2"),
        "bad_expression",
        "a",
        None,
        "assignees.expr",
    ),
]


@pytest.mark.parametrize(
    ("name", "definition", "code", "node", "edge", "field"), SHAPES, ids=[s[0] for s in SHAPES]
)
async def test_unsafe_expression_shape_is_refused_at_deploy_item5(
    api: Api,
    people: People,
    caplog: pytest.LogCaptureFixture,
    name: str,
    definition: dict[str, Any],
    code: str,
    node: str | None,
    edge: str | None,
    field: str,
) -> None:
    await api.deploy(people.root, _flow("child", [], [("start", "end")]))
    before = await counts(api.db)
    response = await api.post("/definitions", people.root, {"definition": definition})
    body = assert_refused(response, 422, "definition_invalid", None)
    found = [p for p in body["problems"] if p["code"] == code]
    assert len(found) == 1, body
    assert found[0]["field"] == field
    if node is not None:
        assert found[0]["node"] == node
    if edge is not None:
        assert found[0]["edge"] == edge
    assert await counts(api.db) == before
    assert_no_traceback(caplog)


async def test_safe_expression_shapes_still_deploy_item5(api: Api, people: People) -> None:
    await api.deploy(people.root, _flow("child", [], [("start", "end")]))
    for definition in (
        _gateway("form.amount ** 2 > 10 ** 9"),
        _gateway('"ab" * 3 == form.s or 2 ** 10 == 1024'),
        _gateway("form.amount / 0 > 1"),  # depends on data: left to the run time
        _result_mapping("response.body.id"),
        _input_mapping('form.prefix + "-" * 3'),
        _assignees("form.owner"),
    ):
        assert (await api.deploy(people.root, definition))["key"] == definition["key"]
