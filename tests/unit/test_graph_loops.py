"""Loops without a wait state are named by the nodes on them (issue 31 item 6,
SPEC E-1): one ``cycle_without_wait`` problem per loop, listing its nodes in
the order a token runs them from the first in document order, the node that
is first, and the edge closing the loop; never a node that merely follows
the loop (the end), and nothing for a loop through a wait state."""

from __future__ import annotations

from typing import Any

from flowledger.definitions.hazards import loops
from flowledger.definitions.validate import parse_definition, validate_definition


def _definition(nodes: list[tuple[str, str]], edges: list[tuple[str, str]]) -> dict[str, Any]:
    outgoing: dict[str, int] = {}
    for a, _ in edges:
        outgoing[a] = outgoing.get(a, 0) + 1
    built = []
    seen: dict[str, int] = {}
    for a, b in edges:
        edge: dict[str, Any] = {"from": a, "to": b}
        types = dict(nodes)
        if types.get(a) == "exclusive" and outgoing[a] > 1:
            seen[a] = seen.get(a, 0) + 1
            if seen[a] == 1:
                edge["default"] = True
            else:
                edge["condition"] = f"form.n == {seen[a]}"
        built.append(edge)
    return {
        "key": "loops",
        "name": "loops",
        "nodes": [
            {
                "key": key,
                "type": kind,
                **({"assignees": {"users": ["mia"]}} if kind == "approval" else {}),
            }
            for key, kind in nodes
        ],
        "edges": built,
    }


def _loop_problems(document: dict[str, Any]) -> list[Any]:
    problems = validate_definition(parse_definition(document))
    return [p for p in problems if p.code == "cycle_without_wait"]


def test_a_loop_is_named_by_its_nodes_not_by_the_end() -> None:
    document = _definition(
        [("start", "start"), ("x", "exclusive"), ("y", "exclusive"), ("end", "end")],
        [("start", "x"), ("x", "y"), ("x", "end"), ("y", "x"), ("y", "end")],
    )
    [problem] = _loop_problems(document)
    assert (problem.node, problem.edge) == ("x", "y->x")
    assert "nodes x -> y -> x form a loop" in problem.message
    assert "end" not in problem.message.split("form a loop")[0]


def test_the_loop_starts_at_its_first_node_in_document_order() -> None:
    document = _definition(
        [
            ("start", "start"),
            ("a", "exclusive"),
            ("c", "exclusive"),
            ("b", "exclusive"),
            ("end", "end"),
        ],
        [("start", "a"), ("a", "b"), ("b", "c"), ("c", "b"), ("c", "end")],
    )
    [problem] = _loop_problems(document)
    # a only leads into the loop; c is declared before b
    assert (problem.node, problem.edge) == ("c", "b->c")
    assert "nodes c -> b -> c form" in problem.message


def test_every_loop_is_reported_once() -> None:
    document = _definition(
        [
            ("start", "start"),
            ("p", "exclusive"),
            ("q", "exclusive"),
            ("r", "exclusive"),
            ("s", "exclusive"),
            ("end", "end"),
        ],
        [("start", "p"), ("p", "q"), ("q", "p"), ("q", "r"), ("r", "s"), ("s", "r"), ("s", "end")],
    )
    problems = _loop_problems(document)
    assert sorted((p.node, p.edge) for p in problems) == [("p", "q->p"), ("r", "s->r")]


def test_a_gateway_that_loops_to_itself_is_a_loop() -> None:
    document = _definition(
        [("start", "start"), ("g", "exclusive"), ("end", "end")],
        [("start", "g"), ("g", "g"), ("g", "end")],
    )
    [problem] = _loop_problems(document)
    assert (problem.node, problem.edge) == ("g", "g->g")
    assert "nodes g -> g form" in problem.message


def test_the_shortest_way_round_is_shown_for_a_tangle() -> None:
    # x -> y -> x and x -> y -> z -> x: one strongly connected part, one problem
    document = _definition(
        [
            ("start", "start"),
            ("x", "exclusive"),
            ("y", "exclusive"),
            ("z", "exclusive"),
            ("end", "end"),
        ],
        [("start", "x"), ("x", "y"), ("x", "end"), ("y", "x"), ("y", "z"), ("z", "x")],
    )
    [problem] = _loop_problems(document)
    assert (problem.node, problem.edge) == ("x", "y->x")
    assert "nodes x -> y -> x form" in problem.message


def test_a_loop_through_a_wait_state_is_fine() -> None:
    document = _definition(
        [("start", "start"), ("g", "exclusive"), ("boss", "approval"), ("end", "end")],
        [("start", "boss"), ("boss", "g"), ("g", "boss"), ("g", "end")],
    )
    assert _loop_problems(document) == []


def test_loops_finds_strongly_connected_parts_without_recursion() -> None:
    size = 5000  # far past the recursion limit of a recursive search
    adj = {f"n{i}": [f"n{(i + 1) % size}"] for i in range(size)}
    adj["tail"] = ["n0"]
    [members] = loops(adj)
    assert members == {f"n{i}" for i in range(size)}
    assert loops({"a": ["b"], "b": []}) == []
