"""Text templates with ``{{ path }}`` placeholders (SPEC C-4, X-4, X-6).

Owns checking, listing and rendering of the templates used in trigger calls,
external dispatches, compensation actions and automation rules:
``{{instanceId}}``, ``{{form.amount}}``, ``{{nodeKey}}``, ``{{error}}``,
``{{system.now}}``, ``{{formData.vendor}}`` — any dotted path into the values
given to :func:`render`.

Only ``{{`` opens a placeholder; a lone ``}}`` is literal text, so JSON bodies
such as ``{"a": {"b": "{{form.b}}"}}`` need no escaping. A placeholder holds a
dotted path of names (letters, digits, ``_`` and ``-``; the first segment
starts with a letter or ``_``), surrounding spaces allowed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from datetime import date, datetime
from typing import Any
from urllib.parse import quote

from flowledger.definitions.expressions import ExpressionError

OPEN = "{{"
CLOSE = "}}"
_PATH = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*(?:\.[A-Za-z0-9_-]+)*")
_PLACEHOLDER = re.compile(r"\{\{\s*(" + _PATH.pattern + r")\s*\}\}")


def validate_template(text: str) -> None:
    """Raise :class:`ExpressionError` for an unclosed, empty or malformed placeholder."""
    pos = 0
    while (start := text.find(OPEN, pos)) >= 0:
        end = text.find(CLOSE, start + len(OPEN))
        if end < 0:
            raise ExpressionError(f"unclosed '{OPEN}' at position {start} in template {text!r}")
        inner = text[start + len(OPEN) : end]
        if OPEN in inner:
            raise ExpressionError(f"unclosed '{OPEN}' at position {start} in template {text!r}")
        path = inner.strip()
        if not path:
            raise ExpressionError(f"empty placeholder at position {start} in template {text!r}")
        if not _PATH.fullmatch(path):
            raise ExpressionError(
                f"bad placeholder {OPEN}{inner}{CLOSE} at position {start} in template "
                f"{text!r} (expected a dotted name such as form.amount)"
            )
        pos = end + len(CLOSE)


#: The values a node's call or dispatch is rendered with (trigger,
#: external approval; :func:`flowledger.engine.outbound_requests.template_values`).
CALL_VALUES = ("instanceId", "taskId", "nodeKey", "definitionKey", "initiator", "traceId", "form")
#: The values a compensation or fallback action is rendered with
#: (:func:`flowledger.compensation.runners.template_values`).
ACTION_VALUES = ("form", "instanceId", "nodeKey", "error")


def dead_placeholder(path: str, names: Sequence[str]) -> str | None:
    """Why the placeholder ``path`` can never have a value when its template is
    rendered with the values ``names``, or None when it can: checked at deploy
    (E-1), so a call never goes out with an empty value for a misspelt name.
    Under ``form`` any field name passes: a form placeholder is not checked
    against the form's declared fields (definitions deploy today with
    ``{{form.x}}`` for a field they leave undeclared; refusing them would
    break documents that worked, for a value that renders empty either way)."""
    root, _, rest = path.partition(".")
    if root not in names:
        return f"unknown placeholder {OPEN}{path}{CLOSE}; these templates use {', '.join(names)}"
    if root != "form" and rest:
        return f"{OPEN}{path}{CLOSE}: {root} is a single value, it has no fields"
    return None


def placeholders(text: str) -> list[str]:
    """The distinct placeholder paths of ``text``, in order of first appearance."""
    seen: dict[str, None] = {}
    for match in _PLACEHOLDER.finditer(text):
        seen.setdefault(match.group(1), None)
    return list(seen)


def resolve(values: Mapping[str, Any], path: str) -> Any:
    """The value at a dotted ``path`` of ``values`` (None when missing). A flat
    key equal to the whole path (``{"form.amount": 1}``) wins."""
    if path in values:
        return values[path]
    current: Any = values
    for segment in path.split("."):
        if isinstance(current, Mapping):
            current = current.get(segment)
        elif (
            isinstance(current, Sequence)
            and not isinstance(current, str | bytes)
            and segment.isdigit()
            and int(segment) < len(current)
        ):
            current = current[int(segment)]
        else:
            return None
    return current


def format_value(value: Any) -> str:
    """How a value is written into text: None as empty, booleans as
    true/false, dates in ISO 8601, mappings and lists as JSON."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, Mapping | list | tuple):
        return json.dumps(value, ensure_ascii=False, default=str, separators=(",", ":"))
    return str(value)


def looks_like_json(text: str) -> bool:
    """Whether a body template is a JSON document (starts with ``{`` or ``[``)."""
    return text.lstrip()[:1] in ("{", "[")


def render(
    text: str, values: Mapping[str, Any], *, url_encode: bool = False, json_escape: bool = False
) -> str:
    """Substitute every placeholder of ``text`` from ``values``; a missing value
    renders as the empty string. With ``url_encode`` each substituted value is
    percent-encoded (``quote(safe="")``), as X-4 asks for URLs. With
    ``json_escape`` each value is escaped for a JSON string literal, so a
    form value holding ``"`` or ``\\`` cannot break a JSON body or add keys to
    it (``{"note": "{{form.note}}"}`` stays one string; a number placed
    unquoted stays a number). Malformed placeholders are left as they are
    (:func:`validate_template` reports them)."""

    def substitute(match: re.Match[str]) -> str:
        rendered = format_value(resolve(values, match.group(1)))
        if url_encode:
            return quote(rendered, safe="")
        if json_escape:
            return json.dumps(rendered, ensure_ascii=False)[1:-1]
        return rendered

    return _PLACEHOLDER.sub(substitute, text)
