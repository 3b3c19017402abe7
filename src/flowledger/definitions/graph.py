"""The shape of the flow graph (SPEC E-1, E-3, E-4).

Owns the rules about the graph as a whole: one start, at least one end, edges
between known nodes, nothing after an end or before the start, every node
reachable from the start, every non-end node able to move on, and every
parallel / inclusive join matched by a fork of the same type upstream, and
every such fork by a join all its branches reach (issue 17 item 5).

Reachability follows normal edges, exception edges (``on: error``) and
failure-policy fallbacks (``failurePolicy.fallbackNodeKey``), since each of
them can move a token. Repeated node keys are reported by ``validate``; here
the first node with a key stands for it.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable

from flowledger.definitions.model import GATEWAY_TYPES, Node, ProcessDefinition
from flowledger.definitions.problems import Problem

JOIN_TYPES = frozenset({"parallel", "inclusive"})


def unique_nodes(defn: ProcessDefinition) -> list[Node]:
    """The first node of each key, in document order."""
    seen: dict[str, Node] = {}
    for node in defn.nodes:
        seen.setdefault(node.key, node)
    return list(seen.values())


def successors(defn: ProcessDefinition) -> dict[str, list[str]]:
    """Every way a token can move from each known node to another known node."""
    adj: dict[str, list[str]] = {node.key: [] for node in defn.nodes}
    for edge in defn.edges:
        if edge.from_ in adj and edge.to in adj:
            adj[edge.from_].append(edge.to)
    for node in defn.nodes:
        policy = node.failure_policy
        if policy and policy.fallback_node_key in adj:
            adj[node.key].append(policy.fallback_node_key)
    return adj


def reachable(adj: dict[str, list[str]], starts: Iterable[str]) -> set[str]:
    """Keys reachable from ``starts`` (the starts included)."""
    seen = {key for key in starts if key in adj}
    queue = deque(seen)
    while queue:
        for nxt in adj[queue.popleft()]:
            if nxt not in seen:
                seen.add(nxt)
                queue.append(nxt)
    return seen


def structure_problems(defn: ProcessDefinition) -> list[Problem]:
    problems: list[Problem] = []
    nodes = unique_nodes(defn)
    keys = {node.key for node in nodes}
    starts = [node for node in defn.nodes if node.type == "start"]

    if not starts:
        problems.append(Problem("no_start_node", "the definition has no start node"))
    for extra in starts[1:]:
        problems.append(
            Problem(
                "multiple_start_nodes",
                f"node {extra.key!r}: a definition has exactly one start node "
                f"({starts[0].key!r} is already one)",
                node=extra.key,
            )
        )
    if not any(node.type == "end" for node in nodes):
        problems.append(Problem("no_end_node", "the definition has no end node"))

    for edge in defn.edges:
        for side, ref in (("from", edge.from_), ("to", edge.to)):
            if ref not in keys:
                problems.append(
                    Problem(
                        "dangling_edge",
                        f"edge {edge.ref!r}: '{side}' names unknown node {ref!r}",
                        edge=edge.ref,
                        field=side,
                    )
                )

    problems += _entry_exit_problems(defn, nodes)
    problems += _dead_end_problems(defn, nodes)
    adj = successors(defn)
    if starts:
        seen = reachable(adj, [node.key for node in starts])
        for node in nodes:
            if node.key not in seen:
                problems.append(
                    Problem(
                        "unreachable_node",
                        f"node {node.key!r} cannot be reached from the start node",
                        node=node.key,
                    )
                )
    problems += _join_problems(defn, nodes, adj)
    problems += _fork_problems(defn, nodes, adj)
    return problems


def _entry_exit_problems(defn: ProcessDefinition, nodes: list[Node]) -> list[Problem]:
    problems: list[Problem] = []
    types = {node.key: node.type for node in nodes}
    for edge in defn.edges:
        if types.get(edge.to) == "start":
            problems.append(
                Problem(
                    "start_has_incoming",
                    f"edge {edge.ref!r}: nothing may lead into start node {edge.to!r}",
                    node=edge.to,
                    edge=edge.ref,
                )
            )
        if types.get(edge.from_) == "end":
            problems.append(
                Problem(
                    "end_has_outgoing",
                    f"edge {edge.ref!r}: nothing may leave end node {edge.from_!r}",
                    node=edge.from_,
                    edge=edge.ref,
                )
            )
    return problems


def _dead_end_problems(defn: ProcessDefinition, nodes: list[Node]) -> list[Problem]:
    problems: list[Problem] = []
    for node in nodes:
        if node.type == "end" or defn.outgoing(node.key):
            continue
        if node.type in GATEWAY_TYPES:
            code, why = "gateway_without_outgoing", f"{node.type} gateway has no outgoing edge"
        elif node.type == "catch":
            code, why = "catch_without_outgoing", "a catch node needs an outgoing edge to continue"
        else:
            code, why = "dead_end", f"{node.type} node has no outgoing edge and is not an end"
        problems.append(Problem(code, f"node {node.key!r}: {why}", node=node.key))
    return problems


def _join_problems(
    defn: ProcessDefinition, nodes: list[Node], adj: dict[str, list[str]]
) -> list[Problem]:
    problems: list[Problem] = []
    for join in nodes:
        if join.type not in JOIN_TYPES:
            continue
        incoming = [edge for edge in defn.incoming(join.key) if edge.from_ in adj]
        if len(incoming) < 2:
            continue
        forks = [
            node
            for node in nodes
            if node.type == join.type and node.key != join.key and len(defn.outgoing(node.key)) >= 2
        ]
        if not any(join.key in reachable(adj, adj[fork.key]) for fork in forks):
            problems.append(
                Problem(
                    "join_without_fork",
                    f"node {join.key!r}: {join.type} join has {len(incoming)} incoming edges "
                    f"but no {join.type} fork upstream",
                    node=join.key,
                )
            )
    return problems


def _fork_problems(
    defn: ProcessDefinition, nodes: list[Node], adj: dict[str, list[str]]
) -> list[Problem]:
    """A fork (a parallel or inclusive gateway with two or more outgoing
    normal edges) needs its join: a gateway of the same type with two or more
    incoming edges that *every* branch can reach. The engine joins a token at
    the first gateway of the fork's type it meets with two or more incoming
    edges; a branch that can only run into an end, or into a join the other
    branches never reach, leaves that join waiting forever (issue 17 item 5)."""
    types = {node.key: node.type for node in nodes}
    problems: list[Problem] = []
    for fork in nodes:
        if fork.type not in JOIN_TYPES:
            continue
        branches = [edge.to for edge in defn.outgoing(fork.key) if edge.to in adj]
        if len(branches) < 2:
            continue
        common = set.intersection(*(reachable(adj, [to]) for to in branches))
        joins = [
            key
            for key in common
            if types.get(key) == fork.type
            and sum(1 for edge in defn.incoming(key) if edge.from_ in adj) >= 2
        ]
        if not joins:
            problems.append(
                Problem(
                    "fork_without_join",
                    f"node {fork.key!r}: {fork.type} fork has {len(branches)} branches but no "
                    f"{fork.type} join (a {fork.type} gateway with two or more incoming edges) "
                    "that every branch reaches",
                    node=fork.key,
                )
            )
    return problems
