"""Flows for the failure-policy and Saga tests (SPEC C-1, C-2, C-3, C-7):
trigger nodes that call a real receiver on 127.0.0.1 which fails on cue
(``receiver.routes`` names a reply per path), definitions built around one
failing trigger ``erp``, and readers for the rows a policy leaves behind
(tickets, history, messages, compensation jobs).

Every trigger here calls ``<receiver>/<node key>/{{form.orderId}}``; a
compensation or fallback action calls ``<receiver>/undo/<name>`` with every
C-4 template in its header and body, so a test can check what was rendered
when the job ran."""

from __future__ import annotations

from collections.abc import Iterator
from itertools import pairwise
from typing import Any

import pytest
from sqlalchemy import select

from flowledger.compensation.policies import compensation_hooks
from flowledger.db.compensation_schema import workflow_compensation_logs, workflow_compensations
from flowledger.db.database import Database
from flowledger.db.engine_schema import workflow_event_outbox, workflow_messages
from tests.integration.engine_helpers import END, START, approval, definition, jobs
from tests.outbound.receivers import Receiver

FORM: list[dict[str, Any]] = [
    {"key": "orderId", "type": "string"},
    {"key": "second", "type": "boolean"},
]
ORDER = "A/1"  # percent-encoded in URLs: "A%2F1"
UNDO_BODY = "order={{form.orderId}};instance={{instanceId}};node={{nodeKey}};error={{error}}"


@pytest.fixture(autouse=True)
def failure_policies() -> Iterator[None]:
    """The policies are the hooks of every engine the tests build
    (tests/runtime_support.py: the default runtime's); nothing is installed."""
    assert compensation_hooks().has_failure_policies
    yield


def undo(receiver: Receiver, name: str, **extra: Any) -> dict[str, Any]:
    """An ``http`` compensation action to ``/undo/<name>/{{form.orderId}}``."""
    return {
        "type": "http",
        "url": f"{receiver.url}/undo/{name}/{{{{form.orderId}}}}",
        "httpMethod": "POST",
        "headers": {"X-Node": "{{nodeKey}}", "X-Instance": "{{instanceId}}"},
        "bodyTemplate": UNDO_BODY,
        "maxRetries": 0,
        **extra,
    }


def undo_body(instance_id: int, node_key: str, error: str, order: str = ORDER) -> bytes:
    return f"order={order};instance={instance_id};node={node_key};error={error}".encode()


def trigger(receiver: Receiver, key: str, **extra: Any) -> dict[str, Any]:
    """A sync trigger node POSTing to ``/<key>/{{form.orderId}}``."""
    call = {
        "kind": "http",
        "url": f"{receiver.url}/{key}/{{{{form.orderId}}}}",
        "httpMethod": "POST",
        "bodyTemplate": '{"order": "{{form.orderId}}"}',
    }
    return {"key": key, "type": "trigger", "call": call, **extra}


def path(key: str, order: str = "A%2F1") -> str:
    """The path a trigger node ``key`` calls (and a route to fail it on)."""
    return f"/{key}/{order}"


def linear(receiver: Receiver, **erp: Any) -> dict[str, Any]:
    """start -> erp (trigger) -> after (handle, hal) -> end, and, when the
    policy falls back to it, ``alt`` (handle, fay) -> end."""
    nodes = [
        START,
        trigger(receiver, "erp", **erp),
        {"key": "after", "type": "handle", "assignees": {"users": ["hal"]}},
        END,
    ]
    edges: list[Any] = [("start", "erp"), ("erp", "after"), ("after", "end")]
    if (erp.get("failurePolicy") or {}).get("fallbackNodeKey") == "alt":
        nodes.append({"key": "alt", "type": "handle", "assignees": {"users": ["fay"]}})
        edges.append(("alt", "end"))
    return definition("orders", nodes, edges, FORM)


def parallel(receiver: Receiver, **erp: Any) -> dict[str, Any]:
    """start -> fork -> [erp (trigger) | wait (delay 1 h) -> desk (approval,
    mia)] -> join -> end."""
    nodes = [
        START,
        {"key": "fork", "type": "parallel"},
        trigger(receiver, "erp", **erp),
        {"key": "wait", "type": "delay", "duration": "PT1H"},
        approval("desk", "mia"),
        {"key": "join", "type": "parallel"},
        END,
    ]
    edges: list[Any] = [
        ("start", "fork"),
        ("fork", "erp"),
        ("fork", "wait"),
        ("wait", "desk"),
        ("erp", "join"),
        ("desk", "join"),
        ("join", "end"),
    ]
    return definition("orders", nodes, edges, FORM)


def saga(
    receiver: Receiver, t4: dict[str, Any], t5: dict[str, Any] | None = None
) -> dict[str, Any]:
    """start -> t1 -> t2 -> t3 -> t4 [-> t5] -> after -> end: t1 and t3
    declare a reverse ``compensation`` action, t2 does not."""
    keys = ["t1", "t2", "t3", "t4"] + (["t5"] if t5 is not None else [])
    nodes = [
        START,
        trigger(receiver, "t1", compensation=undo(receiver, "t1")),
        trigger(receiver, "t2"),
        trigger(receiver, "t3", compensation=undo(receiver, "t3")),
        trigger(receiver, "t4", **t4),
    ]
    if t5 is not None:
        nodes.append(trigger(receiver, "t5", **t5))
    nodes += [{"key": "after", "type": "handle", "assignees": {"users": ["hal"]}}, END]
    chain = ["start", *keys, "after", "end"]
    return definition("saga", nodes, list(pairwise(chain)), FORM)


def saga_detour(receiver: Receiver, t4: dict[str, Any]) -> dict[str, Any]:
    """start -> gw -> (default) t2 -> t1 -> t4 -> after -> end, or with
    ``form.second`` gw -> t1 directly; t1 and t2 declare compensation."""
    nodes = [
        START,
        {"key": "gw", "type": "exclusive"},
        trigger(receiver, "t2", compensation=undo(receiver, "t2")),
        trigger(receiver, "t1", compensation=undo(receiver, "t1")),
        trigger(receiver, "t4", **t4),
        {"key": "after", "type": "handle", "assignees": {"users": ["hal"]}},
        END,
    ]
    edges: list[Any] = [
        ("start", "gw"),
        {"from": "gw", "to": "t1", "condition": "form.second == true"},
        {"from": "gw", "to": "t2", "default": True},
        ("t2", "t1"),
        ("t1", "t4"),
        ("t4", "after"),
        ("after", "end"),
    ]
    return definition("detour", nodes, edges, FORM)


# ------------------------------------------------------------------ readers


async def tickets_of(db: Database, instance_id: int) -> list[dict[str, Any]]:
    t = workflow_compensations
    async with db.read() as conn:
        rows = await conn.execute(select(t).where(t.c.instance_id == instance_id).order_by(t.c.id))
        return [dict(r) for r in rows.mappings().all()]


async def history_kinds(db: Database, ticket_id: int) -> list[str]:
    logs = workflow_compensation_logs
    async with db.read() as conn:
        rows = await conn.execute(
            select(logs.c.kind).where(logs.c.compensation_id == ticket_id).order_by(logs.c.id)
        )
        return [str(r.kind) for r in rows]


async def messages_to(db: Database, *recipients: str) -> list[dict[str, Any]]:
    m = workflow_messages
    async with db.read() as conn:
        rows = await conn.execute(select(m).where(m.c.recipient.in_(recipients)).order_by(m.c.id))
        return [dict(r) for r in rows.mappings().all()]


async def action_jobs(db: Database, instance_id: int) -> list[dict[str, Any]]:
    return await jobs(db, instance_id, type="compensation_action")


def requests_to(receiver: Receiver, prefix: str) -> list[Any]:
    return [r for r in receiver.requests if r.path.startswith(prefix)]


async def outbox(db: Database, instance_id: int) -> list[dict[str, Any]]:
    o = workflow_event_outbox
    async with db.read() as conn:
        rows = await conn.execute(select(o).where(o.c.instance_id == instance_id).order_by(o.c.id))
        return [dict(r) for r in rows.mappings().all()]
