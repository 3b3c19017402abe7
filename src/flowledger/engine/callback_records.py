"""Recorded decisions of external systems (SPEC X-1, X-2): read and write
``workflow_callbacks`` rows inside the caller's step. One row per subject —
an external approval task, or an async trigger's job — written in the same
transaction that acts on the decision, so a decision is either recorded and
applied or neither."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import select

from flowledger.db.callback_schema import workflow_callbacks
from flowledger.engine.step import Step

EXTERNAL = "external"
TRIGGER = "trigger"


@dataclass(frozen=True)
class CallbackRecord:
    kind: str
    subject_id: int
    instance_id: int
    task_id: int
    tenant_id: str
    outcome: str
    source: str
    decided_by: str | None
    comment: str | None
    body: dict[str, Any] | None
    received_at: datetime


def _record(row: Any) -> CallbackRecord:
    return CallbackRecord(
        kind=row.kind,
        subject_id=int(row.subject_id),
        instance_id=int(row.instance_id),
        task_id=int(row.task_id),
        tenant_id=row.tenant_id,
        outcome=row.outcome,
        source=row.source,
        decided_by=row.decided_by,
        comment=row.comment,
        body=row.body,
        received_at=row.received_at,
    )


async def find_record(step: Step, kind: str, subject_id: int) -> CallbackRecord | None:
    row = (
        await step.conn.execute(
            select(workflow_callbacks).where(
                workflow_callbacks.c.kind == kind, workflow_callbacks.c.subject_id == subject_id
            )
        )
    ).first()
    return None if row is None else _record(row)


async def add_record(
    step: Step,
    *,
    kind: str,
    subject_id: int,
    task_id: int,
    outcome: str,
    source: str,
    decided_by: str | None = None,
    comment: str | None = None,
    body: dict[str, Any] | None = None,
) -> CallbackRecord:
    """Record a decision (the caller holds the instance lock, so a second
    decision for the same subject finds this row; the unique constraint backs
    that up)."""
    values: dict[str, Any] = {
        "kind": kind,
        "subject_id": subject_id,
        "instance_id": step.instance_id,
        "task_id": task_id,
        "tenant_id": step.instance["tenant_id"],
        "outcome": outcome,
        "source": source,
        "decided_by": decided_by,
        "comment": comment,
        "body": body,
        "received_at": step.now,
    }
    await step.conn.execute(workflow_callbacks.insert().values(**values))
    return CallbackRecord(
        kind=kind,
        subject_id=subject_id,
        instance_id=step.instance_id,
        task_id=task_id,
        tenant_id=step.instance["tenant_id"],
        outcome=outcome,
        source=source,
        decided_by=decided_by,
        comment=comment,
        body=body,
        received_at=step.now,
    )
