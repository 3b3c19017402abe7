"""Automation templates (SPEC X-6): only ``system.*`` (the six names) and
``formData.*`` placeholders pass the save-time check — compensation
placeholders (C-4) do not; a single-placeholder form value keeps its type;
URL rendering percent-encodes values (X-4). Pure functions, no database."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from flowledger.events.automation_templates import (
    SYSTEM_NAMES,
    AutomationRuleInvalid,
    check_template,
    render_text,
    render_value,
    template_values,
)

NOW = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
SNAPSHOT = {
    "id": 7,
    "type": "task.completed",
    "tenantId": "acme",
    "instanceId": 42,
    "definitionKey": "purchase",
    "payload": {"taskId": 3},
}


def test_system_and_form_data_placeholders_pass_X6() -> None:
    text = " ".join(f"{{{{system.{name}}}}}" for name in SYSTEM_NAMES)
    check_template(text + " {{ formData.vendor }} {{formData.items.0.sku}}", "t")


@pytest.mark.parametrize(
    "text",
    [
        "{{form.amount}}",
        "{{instanceId}}",
        "{{nodeKey}}",
        "{{error}}",
        "{{system.token}}",
        "{{formData}}",
        "{{system}}",
        "{{event.id}}",
        "{{formData.a",
        "{{}}",
    ],
)
def test_other_placeholders_are_refused_with_the_field_X6_C4(text: str) -> None:
    with pytest.raises(AutomationRuleInvalid) as caught:
        check_template(f"x {text} y", "actions[2].title")
    assert caught.value.field == "actions[2].title"
    assert caught.value.code == "automation_rule_invalid"


def test_values_and_rendering_X6_X4() -> None:
    values = template_values(SNAPSHOT, {"amount": 12.5, "vendor": "a&b c", "ok": True}, NOW)
    assert values["system"] == {
        "now": "2024-05-01T12:00:00+00:00",
        "instanceId": 42,
        "eventType": "task.completed",
        "definitionKey": "purchase",
        "tenantId": "acme",
        "eventId": 7,
    }
    assert render_value("{{formData.amount}}", values) == 12.5
    assert render_value(" {{ formData.ok }} ", values) is True
    assert render_value("{{formData.missing}}", values) is None
    assert render_value("{{formData.amount}} EUR", values) == "12.5 EUR"
    assert render_text("/v/{{formData.vendor}}", values, url_encode=True) == "/v/a%26b%20c"
    assert render_text("{{system.eventType}}:{{system.eventId}}", values) == "task.completed:7"
