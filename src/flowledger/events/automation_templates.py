"""Templates of automation rules (SPEC X-6): which placeholders they may use,
the values they are rendered with, and the event snapshot a rule's job
carries.

Automation templates are the ``{{ path }}`` text templates of
:mod:`flowledger.definitions.templates`, limited to two roots — a different
vocabulary from compensation templates (C-4, ``{{form.x}}``,
``{{instanceId}}``):

- ``system.now`` (ISO 8601, when the action runs), ``system.instanceId``,
  ``system.eventType``, ``system.definitionKey``, ``system.tenantId``,
  ``system.eventId``;
- ``formData.<field>`` (any dotted path into the instance's form data as it
  is when the action runs).

Anything else is refused when the rule is saved (:func:`check_template`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from flowledger.definitions.expressions import ExpressionError
from flowledger.definitions.templates import placeholders, render, resolve, validate_template
from flowledger.errors import FlowledgerError

SYSTEM_NAMES = ("now", "instanceId", "eventType", "definitionKey", "tenantId", "eventId")
_ALLOWED = ", ".join(f"system.{name}" for name in SYSTEM_NAMES) + " and formData.<field>"
_WHOLE = re.compile(r"^\s*\{\{\s*([A-Za-z_][A-Za-z0-9_-]*(?:\.[A-Za-z0-9_-]+)*)\s*\}\}\s*$")


class AutomationRuleInvalid(FlowledgerError):
    """A rule that cannot be saved; ``field`` names the offending part
    (``actions[0].bodyTemplate``)."""

    code = "automation_rule_invalid"


def check_template(text: str, field: str) -> None:
    """Refuse a malformed template or one using a placeholder outside
    ``system.*`` / ``formData.*``, naming ``field``."""
    try:
        validate_template(text)
    except ExpressionError as exc:
        raise AutomationRuleInvalid(f"{field}: {exc.message}", field=field) from None
    for path in placeholders(text):
        root, _, rest = path.partition(".")
        if (root == "system" and rest in SYSTEM_NAMES) or (root == "formData" and rest):
            continue
        raise AutomationRuleInvalid(
            f"{field}: unknown placeholder {{{{{path}}}}}; automation templates use {_ALLOWED}",
            field=field,
            placeholder=path,
        )


def event_snapshot(event: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON snapshot of an outbox row that an automation job carries."""
    created = event.get("created_at")
    return {
        "id": int(event["id"]),
        "type": event["event_type"],
        "tenantId": event["tenant_id"],
        "instanceId": event.get("instance_id"),
        "definitionKey": event.get("definition_key"),
        "traceId": event.get("trace_id"),
        "createdAt": created.isoformat() if isinstance(created, datetime) else created,
        "payload": dict(event.get("payload") or {}),
    }


def system_values(snapshot: Mapping[str, Any], now: datetime) -> dict[str, Any]:
    """The ``system.*`` values of an event snapshot at ``now``."""
    return {
        "now": now.isoformat(),
        "instanceId": snapshot.get("instanceId"),
        "eventType": snapshot.get("type"),
        "definitionKey": snapshot.get("definitionKey"),
        "tenantId": snapshot.get("tenantId"),
        "eventId": snapshot.get("id"),
    }


def template_values(
    snapshot: Mapping[str, Any], form: Mapping[str, Any], now: datetime
) -> dict[str, Any]:
    """What automation templates are rendered with."""
    return {"system": system_values(snapshot, now), "formData": dict(form)}


def render_text(
    template: str, values: Mapping[str, Any], *, url_encode: bool = False, json_escape: bool = False
) -> str:
    return render(template, values, url_encode=url_encode, json_escape=json_escape)


def render_value(template: str, values: Mapping[str, Any]) -> Any:
    """A form value from a template: a template that is one placeholder and
    nothing else yields the value itself (a number stays a number, a missing
    value is null); any other template yields its rendered text."""
    whole = _WHOLE.match(template)
    if whole is not None:
        return resolve(values, whole.group(1))
    return render(template, values)
