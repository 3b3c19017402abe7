"""What an alert notification says (SPEC O-22): the email subject and text,
the in-app message and the signed webhook body of one alert event. Pure
functions of the event row; sending is the ``alert_notification`` handler's
job (:mod:`flowledger.handlers.alert_jobs`).

The webhook body is compact UTF-8 JSON with keys in this order::

    {"id": <event id>, "type": "alert.firing" | "alert.resolved",
     "occurredAt": "...", "tenantId": "acme" | null,
     "rule": {"id", "name", "metric", "comparison", "threshold", "severity"},
     "value": 12.0}

signed like event webhooks (:mod:`flowledger.outbound.signing`:
``X-Flowledger-Timestamp``, ``X-Flowledger-Signature``), with
``X-Flowledger-Event: alert.firing`` and ``X-Flowledger-Delivery: <event id>``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from flowledger.ops.alerts.metrics import get_metric

_SYMBOL = {"gt": ">", "gte": ">=", "lt": "<", "lte": "<="}
MESSAGE_KIND = "alert"


def _number(value: float | None) -> str:
    if value is None:
        return "no data"
    return str(int(value)) if float(value).is_integer() else f"{value:.3f}"


def _unit(metric: str) -> str:
    found = get_metric(metric)
    return "" if found is None else (" %" if found.unit == "percent" else f" {found.unit}")


def subject(event: Mapping[str, Any]) -> str:
    """``[CRITICAL] FIRING: dead letters (dead_letters 12 items > 10)``."""
    unit = _unit(event["metric"])
    return (
        f"[{str(event['severity']).upper()}] {str(event['kind']).upper()}: {event['rule_name']} "
        f"({event['metric']} {_number(event['value'])}{unit} "
        f"{_SYMBOL[event['comparison']]} {_number(event['threshold'])})"
    )


def text(event: Mapping[str, Any]) -> str:
    scope = event["tenant_id"] or "all tenants"
    what = (
        "The alert condition has held for the rule's duration."
        if event["kind"] == "firing"
        else "The alert condition no longer holds."
    )
    unit = _unit(event["metric"])
    return "\n".join(
        [
            what,
            "",
            f"Rule:      {event['rule_name']} (#{event['rule_id']})",
            f"Metric:    {event['metric']} = {_number(event['value'])}{unit}",
            f"Condition: {_SYMBOL[event['comparison']]} {_number(event['threshold'])}{unit}",
            f"Severity:  {event['severity']}",
            f"Tenant:    {scope}",
            f"At:        {event['occurred_at'].isoformat()}",
            f"Event:     #{event['id']}",
        ]
    )


def webhook_document(event: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "id": int(event["id"]),
        "type": f"alert.{event['kind']}",
        "occurredAt": event["occurred_at"].isoformat(),
        "tenantId": event["tenant_id"],
        "rule": {
            "id": int(event["rule_id"]),
            "name": event["rule_name"],
            "metric": event["metric"],
            "comparison": event["comparison"],
            "threshold": event["threshold"],
            "severity": event["severity"],
        },
        "value": event["value"],
    }


def webhook_body(event: Mapping[str, Any]) -> bytes:
    document = webhook_document(event)
    return json.dumps(document, ensure_ascii=False, separators=(",", ":")).encode()
