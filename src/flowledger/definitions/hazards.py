"""Deploy-time checks against definitions that would hurt at run time
(issue 17 item 5, SPEC E-1). Problem codes:

* ``cycle_without_wait`` — a loop of nodes none of which waits (only
  start/end/cc/gateways): every start would spin until the runtime step
  guard fires, holding the instance's write lock. One problem per loop,
  naming the nodes on it in order and the edge that closes it;
* ``duplicate_edge`` — the same normal edge ``from -> to`` twice;
* ``duration_out_of_range`` — a delay or timeout longer than
  ``MAX_DURATION`` (``P999999999D`` cannot be added to a date);
* ``url_scheme_not_allowed`` / ``url_placeholder_in_origin`` — an ``http``
  call, dispatch, compensation or fallback-action URL that is not literally
  ``http(s)://host…``, or has a ``{{placeholder}}`` in its scheme or host
  (the origin of a call is never taken from data);
* ``header_value_invalid`` — a control character in a header name or value.

Whether a subprocess's definition exists in the tenant needs the database:
``engine.deployments`` checks it (``subprocess_definition_missing``).
"""

from __future__ import annotations

import re
from collections import Counter, deque
from datetime import timedelta

from flowledger.definitions.graph import successors, unique_nodes
from flowledger.definitions.model import HttpCall, Node, ProcessDefinition
from flowledger.definitions.problems import Problem

# node types that park a token (a task, a timer, a job, a child instance)
WAIT_TYPES = frozenset(
    {"approval", "handle", "delay", "trigger", "external_approval", "subprocess", "catch"}
)
MAX_DURATION = timedelta(days=366 * 100)
_ORIGIN = re.compile(r"^https?://[^/?#{}\s]+(?:[/?#]|$)", re.IGNORECASE)
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def hazard_problems(defn: ProcessDefinition) -> list[Problem]:
    problems = _cycle_problems(defn)
    problems += _duplicate_edges(defn)
    for node in unique_nodes(defn):
        problems += _duration_problems(node)
        for field, call in (("call", node.call), ("dispatch", node.dispatch)):
            if call is not None:
                problems += _call_problems(node, field, call)
        fallback = node.failure_policy.fallback_action if node.failure_policy else None
        for field, action in (
            ("compensation", node.compensation),
            ("failurePolicy.fallbackAction", fallback),
        ):
            if action is not None and action.type == "http" and action.url:
                problems += _url_problems(node, field, action.url)
    return problems


def _cycle_problems(defn: ProcessDefinition) -> list[Problem]:
    """One problem per loop of non-waiting nodes (a strongly connected part
    of the graph of nodes that do not wait), naming the nodes on it in the
    order a token runs them, from the first in document order, and the edge
    that closes it (issue 31 item 6: not a node merely after the loop)."""
    order = [node.key for node in unique_nodes(defn)]
    types = {node.key: node.type for node in unique_nodes(defn)}
    adj = {
        key: [n for n in nexts if types.get(n) not in WAIT_TYPES]
        for key, nexts in successors(defn).items()
        if types.get(key) not in WAIT_TYPES
    }
    problems = []
    for members in loops(adj):
        first = min(members, key=order.index)
        path = _cycle_through(adj, members, first)
        shown = " -> ".join([*path, first])
        problems.append(
            Problem(
                "cycle_without_wait",
                f"nodes {shown} form a loop with no wait state (approval, handle, delay, "
                "trigger, external approval, subprocess or catch): a token would never stop",
                node=first,
                edge=f"{path[-1]}->{first}",
            )
        )
    return problems


def loops(adj: dict[str, list[str]]) -> list[set[str]]:
    """The strongly connected parts of ``adj`` that hold a loop (two or more
    nodes, or one with an edge to itself); Tarjan's algorithm without
    recursion, in the order of ``adj``."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []
    for root in adj:
        if root in index:
            continue
        work = [(root, iter(adj[root]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            key, nexts = work[-1]
            for nxt in nexts:
                if nxt not in adj:
                    continue
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(adj[nxt])))
                    break
                if nxt in on_stack:
                    low[key] = min(low[key], index[nxt])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[key])
                if low[key] == index[key]:
                    members: set[str] = set()
                    while True:
                        top = stack.pop()
                        on_stack.discard(top)
                        members.add(top)
                        if top == key:
                            break
                    if len(members) > 1 or key in adj[key]:
                        found.append(members)
    return found


def _cycle_through(adj: dict[str, list[str]], members: set[str], first: str) -> list[str]:
    """A shortest loop from ``first`` back to it inside ``members`` (the
    path without the final return to ``first``)."""
    parent: dict[str, str] = {}
    queue = deque([first])
    while queue:
        key = queue.popleft()
        for nxt in adj[key]:
            if nxt == first:
                path = [key]
                while path[-1] != first:
                    path.append(parent[path[-1]])
                return path[::-1]
            if nxt in members and nxt not in parent:
                parent[nxt] = key
                queue.append(nxt)
    return [first]  # not reached: every member of a loop lies on a cycle through it


def _duplicate_edges(defn: ProcessDefinition) -> list[Problem]:
    # repeated exception edges are ``multiple_error_edges`` (validate)
    counts = Counter((edge.from_, edge.to, edge.on) for edge in defn.edges if edge.on is None)
    return [
        Problem("duplicate_edge", f"edge {a}->{b} is defined {n} times", edge=f"{a}->{b}")
        for (a, b, _on), n in counts.items()
        if n > 1
    ]


def _duration_problems(node: Node) -> list[Problem]:
    problems = []
    for field, value in (
        ("duration", node.duration),
        ("timeout.after", node.timeout.after if node.timeout else None),
        ("deadline.due", node.deadline.due if node.deadline else None),
        *(
            (f"deadline.escalation[{i}].after", step.after)
            for i, step in enumerate(node.deadline.escalation if node.deadline else [])
        ),
    ):
        if value is not None and value > MAX_DURATION:
            problems.append(
                Problem(
                    "duration_out_of_range",
                    f"node {node.key!r}: {field} is longer than {MAX_DURATION.days} days",
                    node=node.key,
                    field=field,
                )
            )
    return problems


def _url_problems(node: Node, field: str, url: str) -> list[Problem]:
    """An ``http`` URL template is literally ``http(s)://host…`` with no
    placeholder in its scheme or host (a call, a dispatch, a compensation or a
    fallback action: issue 17 item 5, issue 31 item 6)."""
    url = url.strip()
    if not re.match(r"^https?://", url, re.IGNORECASE):
        return [
            Problem(
                "url_scheme_not_allowed",
                f"node {node.key!r}: {field}.url must start with http:// or https://",
                node=node.key,
                field=f"{field}.url",
            )
        ]
    if not _ORIGIN.match(url):
        return [
            Problem(
                "url_placeholder_in_origin",
                f"node {node.key!r}: {field}.url may have placeholders only in its path, "
                "query or fragment",
                node=node.key,
                field=f"{field}.url",
            )
        ]
    return []


def _call_problems(node: Node, field: str, call: HttpCall) -> list[Problem]:
    problems = _url_problems(node, field, call.url) if call.kind == "http" else []
    for name, value in call.headers.items():
        if _CONTROL.search(name) or _CONTROL.search(value):
            problems.append(
                Problem(
                    "header_value_invalid",
                    f"node {node.key!r}: header {name!r} contains a control character",
                    node=node.key,
                    field=f"{field}.headers",
                )
            )
    return problems
