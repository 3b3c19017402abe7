"""Deploy-time validation of a definition (SPEC E-1): the entry point.

Owns :func:`validate_definition` (every cross-object rule, collected, never
stopping at the first), the edge rules (conditions, defaults, exception
edges) and form-schema rules, and :func:`load_definition` = parse + validate.
Node rules live in ``rules``, graph-shape rules in ``graph``, parsing in
``parse``; :class:`Problem`, :class:`DefinitionError` and
:func:`parse_definition` are re-exported here.

Problem codes (stable; each problem names its node, edge ``"from->to"`` and/or
field):

* parsing: ``syntax_error``, ``not_a_mapping``, ``missing_field``,
  ``unknown_field``, ``unknown_node_type``, ``invalid_value``,
  ``connector_id_missing``, ``connector_url_not_relative``,
  ``timeout_transfer_target_missing``, ``compensation_incomplete``,
  ``http_method_invalid``;
* graph: ``no_start_node``, ``multiple_start_nodes``, ``no_end_node``,
  ``start_has_incoming``, ``end_has_outgoing``, ``dangling_edge``,
  ``unreachable_node``, ``dead_end``, ``gateway_without_outgoing``,
  ``catch_without_outgoing``, ``join_without_fork``, ``fork_without_join``;
* nodes: ``duplicate_node_key``, ``missing_assignees``, ``bad_expression``,
  ``timeout_not_allowed``, ``non_positive_duration``, ``delay_missing_wait``,
  ``delay_ambiguous_wait``, ``bad_until``, ``trigger_missing_call``,
  ``external_approval_missing_dispatch``, ``subprocess_missing_definition_key``,
  ``subprocess_recursion``, ``bad_mapping``, ``bad_template``,
  ``failure_policy_not_allowed``, ``fallback_missing_target``,
  ``fallback_node_missing``, ``fallback_to_self``,
  ``compensate_without_compensation``, ``field_not_applicable``;
* edges: ``bad_condition``, ``condition_not_allowed``,
  ``parallel_edge_condition``, ``default_edge_not_allowed``,
  ``default_edge_condition``, ``multiple_default_edges``,
  ``error_edge_target_not_catch``, ``multiple_error_edges``;
* form: ``duplicate_form_field``;
* document values (issue 31, :mod:`.document_values`): ``unpaired_surrogate``,
  ``nul_character``, ``non_finite_number``, ``number_out_of_range``,
  ``binary_not_utf8``, ``unsupported_value``; a literal delay ``until``
  outside the representable range: ``until_out_of_range``;
* deadlines (issue 31 item 4, :mod:`.deadline_rules`): ``deadline_not_allowed``,
  ``deadline_with_timeout``, ``deadline_missing_due``, ``deadline_ambiguous_due``,
  ``deadline_field_unknown``, ``deadline_field_not_a_date``,
  ``escalation_unknown_action``, ``escalation_not_increasing``,
  ``escalation_target_missing``, ``escalation_target_invalid``; at deploy,
  ``escalation_target_unknown`` (``engine.deadlines``);
* hazards (issue 17, :mod:`.hazards`): ``cycle_without_wait``,
  ``duplicate_edge``, ``duration_out_of_range``, ``url_scheme_not_allowed``,
  ``url_placeholder_in_origin``, ``header_value_invalid``; at deploy,
  ``subprocess_definition_missing`` (``engine.deployments``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from flowledger.definitions.expressions import ExpressionError, compile_condition
from flowledger.definitions.graph import structure_problems
from flowledger.definitions.hazards import hazard_problems
from flowledger.definitions.model import CONDITIONAL_GATEWAYS, Edge, ProcessDefinition
from flowledger.definitions.parse import DocumentLimits, Format, parse_definition
from flowledger.definitions.problems import DefinitionError, Problem
from flowledger.definitions.rules import node_problems

__all__ = [
    "DefinitionError",
    "Problem",
    "load_definition",
    "parse_definition",
    "validate_definition",
]


def validate_definition(defn: ProcessDefinition) -> list[Problem]:
    """Every problem of a parsed definition (empty when it may be deployed)."""
    problems: list[Problem] = []
    problems += _form_problems(defn)
    seen: set[str] = set()
    for node in defn.nodes:
        if node.key in seen:
            problems.append(
                Problem(
                    "duplicate_node_key",
                    f"node {node.key!r} is defined more than once",
                    node=node.key,
                    field="key",
                )
            )
            continue
        seen.add(node.key)
        problems += node_problems(defn, node)
    problems += _edge_problems(defn)
    problems += structure_problems(defn)
    problems += hazard_problems(defn)
    return problems


def load_definition(
    source: str | bytes | Mapping[str, Any],
    fmt: Format = "auto",
    *,
    limits: DocumentLimits | None = None,
) -> ProcessDefinition:
    """Parse (within ``limits``) and fully validate ``source``; raise
    :class:`DefinitionError` with every problem found. Structural (parse)
    problems are reported on their own: the cross-node rules need a typed
    definition to run on."""
    defn = parse_definition(source, fmt=fmt, limits=limits)
    problems = validate_definition(defn)
    if problems:
        raise DefinitionError(problems)
    return defn


def _form_problems(defn: ProcessDefinition) -> list[Problem]:
    problems: list[Problem] = []
    seen: set[str] = set()
    for index, field in enumerate(defn.form.fields):
        if field.key in seen:
            problems.append(
                Problem(
                    "duplicate_form_field",
                    f"form field {field.key!r} is defined more than once",
                    field=f"form.fields[{index}].key",
                )
            )
        seen.add(field.key)
    return problems


def _edge_problem(code: str, edge: Edge, message: str, field: str | None = None) -> Problem:
    return Problem(
        code, f"edge {edge.ref!r}: {message}", node=edge.from_, edge=edge.ref, field=field
    )


def _edge_problems(defn: ProcessDefinition) -> list[Problem]:
    problems: list[Problem] = []
    types: dict[str, str] = {}
    for node in defn.nodes:
        types.setdefault(node.key, node.type)  # the first node of a key stands for it
    error_sources: set[str] = set()
    for edge in defn.edges:
        source = types.get(edge.from_)
        if edge.is_error:
            if edge.from_ in error_sources:
                problems.append(
                    _edge_problem(
                        "multiple_error_edges",
                        edge,
                        f"node {edge.from_!r} already has an exception edge",
                        "on",
                    )
                )
            error_sources.add(edge.from_)
            target = types.get(edge.to)
            if target is not None and target != "catch":
                problems.append(
                    _edge_problem(
                        "error_edge_target_not_catch",
                        edge,
                        f"an exception edge must lead to a catch node, not a {target} node",
                        "to",
                    )
                )
        if edge.condition is not None:
            problems += _condition_problems(edge, source)
        if edge.default:
            if edge.is_error or (source is not None and source not in CONDITIONAL_GATEWAYS):
                what = "an exception edge" if edge.is_error else f"a {source} node"
                problems.append(
                    _edge_problem(
                        "default_edge_not_allowed",
                        edge,
                        f"only edges leaving exclusive or inclusive gateways can be default, "
                        f"not {what}",
                        "default",
                    )
                )
            elif edge.condition is not None:
                problems.append(
                    _edge_problem(
                        "default_edge_condition",
                        edge,
                        "a default edge is taken when no condition matches; "
                        "it cannot have a condition",
                        "condition",
                    )
                )
    for key, kind in types.items():
        if kind in CONDITIONAL_GATEWAYS:
            defaults = [edge for edge in defn.outgoing(key) if edge.default]
            for extra in defaults[1:]:
                problems.append(
                    _edge_problem(
                        "multiple_default_edges",
                        extra,
                        f"{kind} gateway {key!r} already has default edge {defaults[0].ref!r}",
                        "default",
                    )
                )
    return problems


def _condition_problems(edge: Edge, source: str | None) -> list[Problem]:
    problems: list[Problem] = []
    if source == "parallel" and not edge.is_error:
        problems.append(
            _edge_problem(
                "parallel_edge_condition",
                edge,
                "a parallel gateway takes every outgoing edge; edges cannot have conditions",
                "condition",
            )
        )
    elif edge.is_error or (source is not None and source not in CONDITIONAL_GATEWAYS):
        what = "an exception edge" if edge.is_error else f"an edge leaving a {source} node"
        problems.append(
            _edge_problem(
                "condition_not_allowed",
                edge,
                f"conditions belong on edges leaving exclusive or inclusive gateways, "
                f"not on {what}",
                "condition",
            )
        )
    try:
        compile_condition(edge.condition or "")
    except ExpressionError as exc:
        problems.append(_edge_problem("bad_condition", edge, exc.message, "condition"))
    return problems
