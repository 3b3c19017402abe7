"""What every instance of one migration plan shares (issue 30): the source
and target versions, the mapping, the field values, the users, who and why
(:class:`PlanInputs`), and a version's nodes indexed for the planner's loop
(:class:`NodeIndex`) — with the memo of what the planner computes once per
plan rather than once per instance."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from flowledger.definitions.model import Edge, Node, ProcessDefinition
from flowledger.ops.migration.reads import Version


@dataclass(frozen=True)
class PlanInputs:
    """What every instance of one plan shares."""

    sources: dict[int, Version]
    target: Version
    mapping: dict[str, str]
    field_values: dict[str, Any]
    users: list[Any]
    actor: str
    reason: str
    migration_id: int | None = None
    #: what is computed once per plan instead of once per instance
    memo: dict[Any, Any] = field(default_factory=dict, compare=False, repr=False)

    def index(self, version: Version) -> NodeIndex:
        found = self.memo.get(("index", version.version))
        if found is None:
            found = self.memo[("index", version.version)] = NodeIndex(version.defn)
        assert isinstance(found, NodeIndex)
        return found


class NodeIndex:
    """One version's nodes by key in a plain dict (the definition's own index
    is a pydantic private attribute, slow to reach in a loop over 10,000
    instances), with the definition's edges and form."""

    def __init__(self, defn: ProcessDefinition) -> None:
        self.defn = defn
        self.form = defn.form
        self.nodes: dict[str, Node] = {}
        for node in defn.nodes:
            self.nodes.setdefault(node.key, node)

    def has_node(self, key: str) -> bool:
        return key in self.nodes

    def node(self, key: str) -> Node:
        return self.nodes[key]

    def outgoing(self, key: str) -> list[Edge]:
        return self.defn.outgoing(key)
