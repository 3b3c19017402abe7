"""A trigger's ``resultMapping`` (SPEC X-1): form field → expression over
``response.status``, ``response.headers``, ``response.body`` (the parsed
JSON, or the text) and ``form.*``, evaluated in the sandboxed expression
language; the rewriting of ``response`` lives with the language
(``definitions.expressions.compile_mapping``) so deploy checks the very
expression this runs."""

from __future__ import annotations

from typing import Any

from flowledger.definitions.expressions import ExpressionError, compile_mapping
from flowledger.engine.outbound_requests import json_or_none


def evaluate_mapping(text: str, form: dict[str, Any], response: dict[str, Any]) -> Any:
    """Evaluate one ``resultMapping`` expression over ``response`` and ``form``
    (compiled by :func:`~flowledger.definitions.expressions.compile_mapping`,
    the check deploy runs too)."""
    compiled = compile_mapping(text)
    try:
        return compiled.value(form, {"response": response})
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
