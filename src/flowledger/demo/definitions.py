"""The demo's process definitions: together they use every node type of
SPEC E-3, and two of them fail on purpose (an exclusive gateway without a
default; an outbound trigger whose target, a documentation address of
TEST-NET-1, the SSRF guard always refuses, so its job goes dead and the
exception edge hands the instance to a repair task) so the monitoring pages
have broken instances to show. Nothing in the demo reaches the network."""

from __future__ import annotations

from typing import Any


def _edges(*pairs: tuple[str, str]) -> list[dict[str, Any]]:
    return [{"from": a, "to": b} for a, b in pairs]


PURCHASE: dict[str, Any] = {
    "key": "purchase",
    "name": "Purchase request",
    "form": {
        "fields": [
            {"key": "amount", "type": "number", "required": True, "label": "Amount"},
            {"key": "vendor", "type": "string", "label": "Vendor"},
            {"key": "reason", "type": "string"},
        ]
    },
    "nodes": [
        {"key": "start", "type": "start"},
        {
            "key": "manager",
            "type": "approval",
            "name": "Manager approval",
            "assignees": {"users": ["alice"]},
            "timeout": {"after": "PT24H", "action": "notify"},
        },
        {"key": "size", "type": "exclusive"},
        {
            "key": "cfo",
            "type": "approval",
            "name": "CFO approval",
            "assignees": {"users": ["bob"]},
            "timeout": {"after": "PT48H", "action": "transfer", "transferTo": "carol"},
        },
        {"key": "finance", "type": "cc", "assignees": {"users": ["carol"]}},
        {"key": "end", "type": "end"},
    ],
    "edges": [
        *_edges(("start", "manager"), ("manager", "size")),
        {"from": "size", "to": "cfo", "condition": "form.amount > 10000"},
        {"from": "size", "to": "finance", "default": True},
        *_edges(("cfo", "finance"), ("finance", "end")),
    ],
}

ONBOARDING: dict[str, Any] = {
    "key": "onboarding",
    "name": "Employee onboarding",
    "form": {"fields": [{"key": "employee", "type": "string", "required": True}]},
    "nodes": [
        {"key": "start", "type": "start"},
        {"key": "split", "type": "parallel"},
        {"key": "it", "type": "handle", "name": "Prepare laptop", "assignees": {"users": ["dave"]}},
        {"key": "hr", "type": "handle", "name": "Contract", "assignees": {"users": ["erin"]}},
        {"key": "merge", "type": "parallel"},
        {"key": "cooldown", "type": "delay", "duration": "PT1H"},
        {"key": "welcome", "type": "handle", "assignees": {"expr": "form.employee"}},
        {"key": "end", "type": "end"},
    ],
    "edges": _edges(
        ("start", "split"),
        ("split", "it"),
        ("split", "hr"),
        ("it", "merge"),
        ("hr", "merge"),
        ("merge", "cooldown"),
        ("cooldown", "welcome"),
        ("welcome", "end"),
    ),
}

VENDOR_CHECK: dict[str, Any] = {
    "key": "vendor_check",
    "name": "Vendor compliance check",
    "form": {
        "fields": [
            {"key": "vendor", "type": "string", "required": True},
            {"key": "ok", "type": "boolean"},
        ]
    },
    "nodes": [
        {"key": "start", "type": "start"},
        {"key": "audit", "type": "approval", "assignees": {"users": ["frank"]}},
        {"key": "end", "type": "end"},
    ],
    "edges": _edges(("start", "audit"), ("audit", "end")),
}

VENDOR_ONBOARDING: dict[str, Any] = {
    "key": "vendor_onboarding",
    "name": "Vendor onboarding",
    "form": {
        "fields": [
            {"key": "vendor", "type": "string", "required": True},
            {"key": "checked", "type": "boolean"},
        ]
    },
    "nodes": [
        {"key": "start", "type": "start"},
        {
            "key": "check",
            "type": "subprocess",
            "definitionKey": "vendor_check",
            "inputMapping": {"vendor": "form.vendor"},
            "outputMapping": {"checked": "form.ok"},
        },
        {"key": "sign", "type": "approval", "assignees": {"users": ["alice"]}},
        {"key": "end", "type": "end"},
    ],
    "edges": _edges(("start", "check"), ("check", "sign"), ("sign", "end")),
}

EXPENSE: dict[str, Any] = {
    "key": "expense",
    "name": "Expense claim",
    "form": {
        "fields": [
            {"key": "amount", "type": "number", "required": True},
            {"key": "category", "type": "string", "enum": ["travel", "legal", "other"]},
        ]
    },
    "nodes": [
        {"key": "start", "type": "start"},
        {"key": "route", "type": "inclusive"},
        {"key": "manager", "type": "approval", "assignees": {"users": ["alice"]}},
        {"key": "finance", "type": "approval", "assignees": {"users": ["carol"]}},
        {"key": "legal", "type": "approval", "assignees": {"users": ["bob"]}},
        {"key": "collect", "type": "inclusive"},
        {"key": "end", "type": "end"},
    ],
    "edges": [
        {"from": "start", "to": "route"},
        {"from": "route", "to": "manager", "condition": "form.amount > 0"},
        {"from": "route", "to": "finance", "condition": "form.amount > 500"},
        {"from": "route", "to": "legal", "condition": "form.category == 'legal'"},
        *_edges(
            ("manager", "collect"), ("finance", "collect"), ("legal", "collect"), ("collect", "end")
        ),
    ],
}

ERP_SYNC: dict[str, Any] = {
    "key": "erp_sync",
    "name": "ERP order sync",
    "form": {"fields": [{"key": "orderId", "type": "string", "required": True}]},
    "nodes": [
        {"key": "start", "type": "start"},
        {
            "key": "push",
            "type": "trigger",
            "call": {
                "kind": "http",
                "url": "https://192.0.2.10/orders/{{form.orderId}}",
                "httpMethod": "PUT",
            },
        },
        {
            "key": "partner",
            "type": "external_approval",
            "dispatch": {"kind": "http", "url": "https://192.0.2.20/approvals"},
        },
        {"key": "repair", "type": "catch", "assignees": {"users": ["admin"]}},
        {"key": "end", "type": "end"},
    ],
    "edges": [
        *_edges(("start", "push"), ("push", "partner"), ("partner", "end"), ("repair", "end")),
        {"from": "push", "to": "repair", "on": "error"},
    ],
}

INVOICE_PUSH: dict[str, Any] = {
    "key": "invoice_push",
    "name": "Invoice push with a repair policy",
    "form": {"fields": [{"key": "invoiceId", "type": "string", "required": True}]},
    "nodes": [
        {"key": "start", "type": "start"},
        {
            "key": "post",
            "type": "trigger",
            "call": {
                "kind": "http",
                "url": "https://192.0.2.30/invoices",
                "httpMethod": "POST",
                "bodyTemplate": '{"invoice": "{{form.invoiceId}}", "process": "{{instanceId}}"}',
            },
            "maxRetries": 0,
            "compensation": {
                "type": "http",
                "url": "https://192.0.2.30/invoices/{{form.invoiceId}}",
                "httpMethod": "DELETE",
            },
            "failurePolicy": {"action": "notify"},
        },
        {"key": "end", "type": "end"},
    ],
    "edges": _edges(("start", "post"), ("post", "end")),
}

ROUTING_GAP: dict[str, Any] = {
    "key": "routing_gap",
    "name": "Routing with a gap (exclusive without default)",
    "form": {"fields": [{"key": "region", "type": "string", "required": True}]},
    "nodes": [
        {"key": "start", "type": "start"},
        {"key": "region", "type": "exclusive"},
        {"key": "emea", "type": "approval", "assignees": {"users": ["alice"]}},
        {"key": "apac", "type": "approval", "assignees": {"users": ["bob"]}},
        {"key": "end", "type": "end"},
    ],
    "edges": [
        {"from": "start", "to": "region"},
        {"from": "region", "to": "emea", "condition": "form.region == 'emea'"},
        {"from": "region", "to": "apac", "condition": "form.region == 'apac'"},
        *_edges(("emea", "end"), ("apac", "end")),
    ],
}

PARTNER_REVIEW: dict[str, Any] = {
    "key": "partner_review",
    "name": "Partner contract review (external approval)",
    "form": {"fields": [{"key": "item", "type": "string", "required": True}]},
    "nodes": [
        {"key": "start", "type": "start"},
        {
            "key": "partner",
            "type": "external_approval",
            "dispatch": {"kind": "http", "url": "https://192.0.2.20/reviews"},
        },
        {"key": "end", "type": "end"},
    ],
    "edges": _edges(("start", "partner"), ("partner", "end")),
}

ALL = [
    PURCHASE,
    ONBOARDING,
    VENDOR_CHECK,
    VENDOR_ONBOARDING,
    EXPENSE,
    ERP_SYNC,
    INVOICE_PUSH,
    ROUTING_GAP,
    PARTNER_REVIEW,
]
