"""Deploy-time checks against definitions that would hurt at run time
(issue 17 item 5, SPEC E-1). Problem codes:

* ``cycle_without_wait`` — a loop of nodes none of which waits (only
  start/end/cc/gateways): every start would spin until the runtime step
  guard fires, holding the instance's write lock;
* ``duplicate_edge`` — the same normal edge ``from -> to`` twice;
* ``duration_out_of_range`` — a delay or timeout longer than
  ``MAX_DURATION`` (``P999999999D`` cannot be added to a date);
* ``url_scheme_not_allowed`` / ``url_placeholder_in_origin`` — an ``http``
  call or dispatch URL that is not literally ``http(s)://host…``, or has a
  ``{{placeholder}}`` in its scheme or host (the origin of a call is never
  taken from data);
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
    return problems


def _cycle_problems(defn: ProcessDefinition) -> list[Problem]:
    """Kahn's algorithm on the subgraph of non-waiting nodes: what cannot be
    peeled off lies on (or right after) a loop without a wait state."""
    types = {node.key: node.type for node in unique_nodes(defn)}
    adj = {
        key: [n for n in nexts if types.get(n) not in WAIT_TYPES]
        for key, nexts in successors(defn).items()
        if types.get(key) not in WAIT_TYPES
    }
    incoming: Counter[str] = Counter(n for nexts in adj.values() for n in nexts)
    queue = deque(key for key in adj if incoming[key] == 0)
    left = set(adj)
    while queue:
        key = queue.popleft()
        left.discard(key)
        for nxt in adj[key]:
            incoming[nxt] -= 1
            if incoming[nxt] == 0:
                queue.append(nxt)
    if not left:
        return []
    names = ", ".join(sorted(left))
    return [
        Problem(
            "cycle_without_wait",
            f"nodes {names} form a loop with no wait state (approval, handle, delay, trigger, "
            "external approval, subprocess or catch): a token would never stop",
            node=sorted(left)[0],
        )
    ]


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


def _call_problems(node: Node, field: str, call: HttpCall) -> list[Problem]:
    problems = []
    if call.kind == "http":
        url = call.url.strip()
        if not re.match(r"^https?://", url, re.IGNORECASE):
            problems.append(
                Problem(
                    "url_scheme_not_allowed",
                    f"node {node.key!r}: {field}.url must start with http:// or https://",
                    node=node.key,
                    field=f"{field}.url",
                )
            )
        elif not _ORIGIN.match(url):
            problems.append(
                Problem(
                    "url_placeholder_in_origin",
                    f"node {node.key!r}: {field}.url may have placeholders only in its path, "
                    "query or fragment",
                    node=node.key,
                    field=f"{field}.url",
                )
            )
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
