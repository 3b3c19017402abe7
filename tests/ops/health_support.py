"""Helpers of the health inspection and consistency tests (SPEC O-16,
O-12): run the inspection / an instance's findings at the test clock, flush
the event outbox through the real relay and dispatch job, and the small
definitions every node type is tested with."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from sqlalchemy import update

from flowledger.clock import ManualClock
from flowledger.db.database import Database
from flowledger.db.engine_schema import workflow_event_outbox, workflow_tokens
from flowledger.events.relay import EventRelay
from flowledger.ops.diagnostics.consistency import InstanceFindings, instance_findings
from flowledger.ops.health.counts import problem_counts
from flowledger.ops.health.inspection import Problem, inspect, summarize
from tests.integration.engine_helpers import END, START, approval, definition, run_due_jobs


async def inspection(
    db: Database, clock: ManualClock, *, threshold_min: int = 30, **kw: Any
) -> list[Problem]:
    """The inspection's problems; for an engine-wide scope (no instance id)
    the counting statement's counts must equal their summary too (SPEC
    O-16, O-22: the health score counts what the inspection lists)."""
    threshold = timedelta(minutes=threshold_min)
    async with db.read() as conn:
        problems = await inspect(conn, now=clock.now(), threshold=threshold, **kw)
        if kw.get("instance_id") is None:
            scope = {k: v for k, v in kw.items() if k != "instance_id"}
            counts = await problem_counts(conn, now=clock.now(), threshold=threshold, **scope)
            assert counts == summarize(problems), (counts, summarize(problems))
        return problems


def summary(problems: list[Problem]) -> list[tuple[Any, ...]]:
    return [(p.rule, p.level, p.instance_id, p.task_id, p.node_key, p.job_id) for p in problems]


async def findings(
    db: Database, clock: ManualClock, instance_id: int, *, threshold_min: int = 10
) -> InstanceFindings:
    """The drawer's findings, the inspection's rules at ``threshold_min``
    (the drawer's default: 10)."""
    async with db.read() as conn:
        return await instance_findings(
            conn, instance_id, now=clock.now(), threshold=timedelta(minutes=threshold_min)
        )


async def flush_events(db: Database, clock: ManualClock) -> None:
    """Mark every pending outbox row dispatched, as the event dispatcher
    would, without running any other job (the dispatch itself is tested in
    tests/events)."""
    async with db.begin() as conn:
        await conn.execute(
            update(workflow_event_outbox)
            .where(workflow_event_outbox.c.status == "pending")
            .values(status="dispatched", dispatched_at=clock.now())
        )


async def run_and_flush(db: Database, clock: ManualClock) -> None:
    """Run every due job, with the event relay's dispatch jobs (a worker)."""
    for _ in range(20):
        await run_due_jobs(db, clock)
        if await EventRelay(db, clock).relay_once() is None:
            return
    await run_due_jobs(db, clock)


async def consume_tokens(db: Database, instance_id: int) -> None:
    """A crash-only state: every token of the instance consumed."""
    async with db.begin() as conn:
        await conn.execute(
            update(workflow_tokens)
            .where(workflow_tokens.c.instance_id == instance_id)
            .values(state="consumed")
        )


def delay_flow(key: str = "wait", duration: str = "PT1H") -> dict[str, Any]:
    nodes = [
        START,
        {"key": "pause", "type": "delay", "duration": duration},
        approval("ok", "alice"),
    ]
    return definition(key, [*nodes, END], [("start", "pause"), ("pause", "ok"), ("ok", "end")])


def approval_flow(key: str = "leave", **extra: Any) -> dict[str, Any]:
    return definition(
        key,
        [START, approval("manager", "alice", **extra), END],
        [("start", "manager"), ("manager", "end")],
    )


def dead_end_flow(key: str = "dead") -> dict[str, Any]:
    """An exclusive gateway whose only edge never matches and has no default:
    the node fails and its token stays there (E-3)."""
    nodes = [START, {"key": "route", "type": "exclusive"}, approval("big", "alice"), END]
    edges: list[Any] = [
        ("start", "route"),
        {"from": "route", "to": "big", "condition": "form.amount > 100"},
        ("big", "end"),
    ]
    return definition(key, nodes, edges, [{"key": "amount", "type": "number"}])


def subprocess_flow(
    key: str = "parent", child: str = "kid"
) -> tuple[dict[str, Any], dict[str, Any]]:
    kid = definition(
        child, [START, approval("check", "auditor"), END], [("start", "check"), ("check", "end")]
    )
    parent = definition(
        key,
        [START, {"key": "sub", "type": "subprocess", "definitionKey": child}, END],
        [("start", "sub"), ("sub", "end")],
    )
    return parent, kid


def trigger_flow(url: str, key: str = "erp", **node: Any) -> dict[str, Any]:
    call = {"kind": "http", "url": f"{url}/orders", "httpMethod": "POST", "bodyTemplate": "{}"}
    nodes = [
        START,
        {"key": "erp", "type": "trigger", "call": call, **node},
        approval("after", "alice"),
    ]
    edges: list[Any] = [("start", "erp"), ("erp", "after"), ("after", "end")]
    return definition(key, [*nodes, END], edges)


def external_flow(url: str, key: str = "ext", **node: Any) -> dict[str, Any]:
    dispatch = {"kind": "http", "url": f"{url}/approvals", "bodyTemplate": "{}"}
    nodes = [START, {"key": "partner", "type": "external_approval", "dispatch": dispatch, **node}]
    return definition(key, [*nodes, END], [("start", "partner"), ("partner", "end")])
