"""A trigger's ``resultMapping`` (SPEC X-1): form field → expression over
``response.status``, ``response.headers``, ``response.body`` (the parsed
JSON, or the text) and ``form.*``, evaluated in the sandboxed expression
language."""

from __future__ import annotations

import ast
from typing import Any

from flowledger.definitions.expressions import ExpressionError, evaluate_value
from flowledger.engine.outbound_requests import json_or_none


class _ResponseName(ast.NodeTransformer):
    """``response.x`` → ``system.response.x`` (the sandbox knows ``form`` and
    ``system`` only; the rewritten text is checked by it like any other)."""

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id != "response":
            return node
        system = ast.Name(id="system", ctx=ast.Load())
        return ast.copy_location(ast.Attribute(value=system, attr="response", ctx=node.ctx), node)


def evaluate_mapping(text: str, form: dict[str, Any], response: dict[str, Any]) -> Any:
    """Evaluate one ``resultMapping`` expression over ``response`` and ``form``."""
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except (SyntaxError, ValueError) as exc:
        raise ExpressionError(f"resultMapping {text!r} does not parse: {exc}") from None
    rewritten = ast.unparse(_ResponseName().visit(tree))
    try:
        return evaluate_value(rewritten, form, {"response": response})
    except ExpressionError as exc:
        raise ExpressionError(f"resultMapping {text!r}: {exc.message}") from None


def map_result(
    mapping: dict[str, str], form: dict[str, Any], response: dict[str, Any]
) -> dict[str, Any]:
    """The form changes a resultMapping asks for (``{field: expression}``)."""
    return {field: evaluate_mapping(text, form, response) for field, text in mapping.items()}


def response_view(status: int | None, headers: dict[str, str], body: Any) -> dict[str, Any]:
    """What ``response`` means in a resultMapping: status, headers and the
    body parsed as JSON when it is JSON, else its text."""
    if isinstance(body, bytes):
        text = body.decode("utf-8", errors="replace")
        parsed = json_or_none(text) if text.strip() else None
        body = text if parsed is None else parsed
    return {"status": status, "headers": headers, "body": body}
