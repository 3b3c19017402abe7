"""Interventions (issue 31 item 2): the record of an operator's action on an
instance, in the instance's own engine trace (E-8).

**The mechanism.** An intervention is one ``workflow_trace`` row with
``event = "intervention"`` and ``detail``::

    {"action": "force_jump", "actor": "alice", "reason": "…",
     "changes": [{"field": "node", "before": "review", "after": "archive"}, …]}

written by :func:`record` (or :func:`record_in_step` inside an engine step)
**in the transaction of the action's effect** — buffered with the step's
other trace rows when the transaction has the engine's write buffer — so an
action that fails or is refused rolls its intervention back with it, and a
committed action always has one. ``at`` is the row's ``created_at`` (the
action's clock reading); the row's ``task_id`` / ``job_id`` / ``node_key``
name what it touched when it is one thing.

Why the trace and not ``operation_audit`` with more columns: the audit row
is written *after* the engine's commit, in a transaction of its own, on
purpose (:mod:`flowledger.access.audit`: it must also record refusals and
failures, whose transaction rolled back), so it cannot be "in the same
transaction as the effect" without turning that design around; and it is
keyed by the API's target (a task, a job, a definition, a recovery action),
not by the instance. The trace is already the instance's time-ordered
timeline: the drawer pages it by id, the diagnostic bundle carries it,
retention purges it with the instance; an intervention row in it needs no
schema change (``detail`` is JSON) and no merge of two sources into one
keyset-paged list. The audit keeps its job — who tried what, and whether it
was allowed — beside it.

``changes`` hold the values as they were and became (node keys, assignees,
form field values, job / task / ticket statuses). Secret form fields are
masked when read, by :func:`flowledger.ops.diagnostics.redaction.redact` (a change whose
``field`` names a secret has its values redacted).

The vocabulary is :data:`ACTIONS`. :data:`MIGRATION` names the hook for the
migration of instances (issue 30), which has not landed: no action writes it
yet."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Protocol

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db.engine_schema import workflow_instances
from flowledger.engine.write_buffer import add_trace

EVENT = "intervention"

FORCE_JUMP = "force_jump"
REASSIGN = "reassign"
REMIND = "remind"
FORM_CORRECTION = "form_correction"
JOB_RETRY = "job_retry"
JOB_SKIP = "job_skip"
BATCH_RECOVERY = "batch_recovery"
TARGETED_RECOVERY = "targeted_recovery"
COMPENSATION_RESUME = "compensation_resume"
COMPENSATION_RETRY = "compensation_retry"
COMPENSATION_RELEASE = "compensation_release"
COMPENSATION_TERMINATE = "compensation_terminate"
SUSPEND = "suspend"
RESUME = "resume"
# issue 30 (migration of instances to another definition version): the code
# its action will record; nothing writes it until that lands.
MIGRATION = "migration"

ACTIONS = (
    FORCE_JUMP,
    REASSIGN,
    REMIND,
    FORM_CORRECTION,
    JOB_RETRY,
    JOB_SKIP,
    BATCH_RECOVERY,
    TARGETED_RECOVERY,
    COMPENSATION_RESUME,
    COMPENSATION_RETRY,
    COMPENSATION_RELEASE,
    COMPENSATION_TERMINATE,
    SUSPEND,
    RESUME,
    MIGRATION,
)

Change = dict[str, Any]


def change(field: str, before: Any, after: Any) -> Change:
    """One ``{field, before, after}`` entry of ``changes``."""
    return {"field": field, "before": before, "after": after}


def nodes_text(keys: list[str] | tuple[str, ...] | set[str]) -> str | None:
    """Several node keys as one value (sorted, distinct), None for none."""
    distinct = sorted({k for k in keys if k})
    return ", ".join(distinct) if distinct else None


def detail(action: str, actor: str, reason: str | None, changes: list[Change]) -> dict[str, Any]:
    if action not in ACTIONS:
        raise ValueError(f"unknown intervention action {action!r}")
    return {"action": action, "actor": actor, "reason": reason, "changes": changes}


class _StepLike(Protocol):
    @property
    def actor(self) -> str: ...

    async def trace(
        self,
        event: str,
        *,
        node_key: str | None = None,
        token_id: int | None = None,
        task_id: int | None = None,
        job_id: int | None = None,
        detail: dict[str, Any] | None = None,
    ) -> None: ...


async def record_in_step(
    step: _StepLike,
    action: str,
    *,
    reason: str | None,
    changes: list[Change],
    node_key: str | None = None,
    task_id: int | None = None,
    job_id: int | None = None,
) -> None:
    """Record an intervention by the step's actor, in the step's transaction."""
    await step.trace(
        EVENT,
        node_key=node_key,
        task_id=task_id,
        job_id=job_id,
        detail=detail(action, step.actor, reason, changes),
    )


async def record(
    conn: AsyncConnection,
    instance_id: int,
    action: str,
    *,
    actor: str,
    reason: str | None,
    changes: list[Change],
    now: datetime,
    trace_id: str | None = None,
    node_key: str | None = None,
    task_id: int | None = None,
    job_id: int | None = None,
) -> None:
    """Record an intervention in ``conn``'s transaction (an action that runs
    no engine step: a reminder, a job retry or skip, a ticket's release).
    Nothing when the instance row is gone (purged): there is no timeline."""
    if trace_id is None:
        trace_id = (
            await conn.execute(
                select(workflow_instances.c.trace_id).where(workflow_instances.c.id == instance_id)
            )
        ).scalar_one_or_none()
        if trace_id is None:
            return
    await add_trace(
        conn,
        {
            "instance_id": instance_id,
            "trace_id": trace_id,
            "event": EVENT,
            "node_key": node_key,
            "token_id": None,
            "task_id": task_id,
            "job_id": job_id,
            "detail": detail(action, actor, reason, changes),
            "created_at": now,
        },
    )
