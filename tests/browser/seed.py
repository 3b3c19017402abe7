"""What the action tests need besides the demo, made through the API: an
approval flow assigned to the admin, a compensate-policy copy of the demo's
invoice push (its undo call is refused too, so the ticket's action fails),
and fresh broken instances (dead trigger jobs, notify tickets, repair tasks)."""

from __future__ import annotations

import time
from typing import Any

import httpx

from flowledger.demo.definitions import INVOICE_PUSH

APPROVAL: dict[str, Any] = {
    "key": "console_approval",
    "name": "Console approval",
    "form": {
        "fields": [
            {"key": "amount", "type": "number", "required": True, "label": "Amount"},
            {"key": "note", "type": "string", "label": "Note"},
        ]
    },
    "nodes": [
        {"key": "start", "type": "start"},
        {"key": "review", "type": "approval", "assignees": {"users": ["admin"]}},
        {"key": "end", "type": "end"},
    ],
    "edges": [{"from": "start", "to": "review"}, {"from": "review", "to": "end"}],
}

UNDO = {
    **INVOICE_PUSH,
    "key": "invoice_undo",
    "name": "Invoice push undone on failure",
    "nodes": [
        {**n, "failurePolicy": {"action": "compensate"}} if n["key"] == "post" else n
        for n in INVOICE_PUSH["nodes"]
    ],
}


def wait_for(check: Any, timeout: float = 60.0, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.3)


def seed(api: httpx.Client) -> dict[str, list[int]]:
    for definition in (APPROVAL, UNDO):
        response = api.post("/definitions", json={"definition": definition})
        assert response.status_code == 201, response.text
    started: dict[str, list[int]] = {"approval": [], "notify": [], "undo": [], "erp": []}
    for i in range(4):
        started["approval"].append(
            api.post(
                "/instances",
                json={"definitionKey": "console_approval", "form": {"amount": 100 + i}},
            ).json()["id"]
        )
    for i in range(3):
        started["notify"].append(
            api.post(
                "/instances",
                json={"definitionKey": "invoice_push", "form": {"invoiceId": f"B-{i}"}},
            ).json()["id"]
        )
    started["undo"].append(
        api.post(
            "/instances", json={"definitionKey": "invoice_undo", "form": {"invoiceId": "U-1"}}
        ).json()["id"]
    )
    for i in range(4):
        started["erp"].append(
            api.post(
                "/instances", json={"definitionKey": "erp_sync", "form": {"orderId": f"O-{i}"}}
            ).json()["id"]
        )
    ours = set(started["notify"]) | set(started["undo"])

    def tickets_ready() -> bool:
        items = api.get("/compensation/list", params={"limit": 100}).json()["items"]
        mine = {t["instanceId"]: t for t in items if t["instanceId"] in ours}
        undo = mine.get(started["undo"][0])
        return (
            len(mine) == len(ours)
            and undo is not None
            and undo["compensationActionStatus"] == "failed"
        )

    wait_for(tickets_ready, 60, "the seeded tickets")
    wait_for(
        lambda: (
            len(api.get("/tasks", params={"status": "pending", "limit": 100}).json()["items"]) >= 8
        ),
        60,
        "the admin's tasks",
    )
    return started
