"""The node mapping of a migration (issue 30): drafted from the source and
target versions — a source node maps to the target node of the same key and
the same type — then the operator's overrides (``old → new``) on top.
An override naming a node neither version has is refused (422, the field
``mapping.<old>``); an override to a node of another type is allowed here
and blocks the instances that sit on it (``node_type_changed``)."""

from __future__ import annotations

from collections.abc import Iterable

from flowledger.definitions.model import ProcessDefinition
from flowledger.ops.migration.model import MigrationInvalid


def draft_mapping(
    sources: Iterable[ProcessDefinition], target: ProcessDefinition
) -> dict[str, str]:
    """Same key and same type, over every source version."""
    out: dict[str, str] = {}
    for source in sources:
        for node in source.nodes:
            if target.has_node(node.key) and target.node(node.key).type == node.type:
                out[node.key] = node.key
    return out


def plan_mapping(
    sources: list[ProcessDefinition], target: ProcessDefinition, overrides: dict[str, str]
) -> dict[str, str]:
    """The drafted mapping with ``overrides`` applied, each one checked."""
    mapping = draft_mapping(sources, target)
    for old, new in overrides.items():
        if not any(source.has_node(old) for source in sources):
            raise MigrationInvalid(
                f"{old!r} is not a node of the source versions", field=f"mapping.{old}"
            )
        if not target.has_node(new):
            raise MigrationInvalid(
                f"{new!r} is not a node of the target version", field=f"mapping.{old}"
            )
        mapping[old] = new
    return mapping
