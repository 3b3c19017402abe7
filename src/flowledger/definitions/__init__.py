"""Process definitions (SPEC E-1..E-3, C-1, C-4; DESIGN "Definition format").

Modules, one job each:

* ``model``       - the pydantic models and per-object rules;
* ``expressions`` - the sandboxed condition / value expression language;
* ``templates``   - ``{{ path }}`` text templates: check, list, render;
* ``parse``       - JSON / YAML text to a typed definition, errors as problems;
* ``document_values`` - the values a document may hold (JSON's, nothing else);
* ``hazards``     - what would hurt at run time (loops without a wait, URLs);
* ``graph``       - graph-shape rules (start, end, reachability, joins);
* ``rules``       - per-node configuration rules;
* ``problems``    - :class:`Problem` and :class:`DefinitionError`;
* ``validate``    - :func:`validate_definition` and :func:`load_definition`.

This package depends only on ``flowledger.errors``; the engine, API and
database layers import it, never the other way round.
"""

from flowledger.definitions.expressions import (
    CompiledCondition,
    ExpressionError,
    compile_condition,
    evaluate_value,
)
from flowledger.definitions.model import Edge, Node, ProcessDefinition
from flowledger.definitions.problems import DefinitionError, Problem
from flowledger.definitions.validate import load_definition, parse_definition, validate_definition

__all__ = [
    "CompiledCondition",
    "DefinitionError",
    "Edge",
    "ExpressionError",
    "Node",
    "Problem",
    "ProcessDefinition",
    "compile_condition",
    "evaluate_value",
    "load_definition",
    "parse_definition",
    "validate_definition",
]
