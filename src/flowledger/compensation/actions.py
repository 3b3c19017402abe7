"""Registering compensation actions (SPEC C-4, C-5): one
``compensation_action`` job per action, the action document in its payload.

The reverse action of compensate / Saga and the alternate action of
fallback share this path. The job's budget is ``maxAttempts = maxRetries +
1`` (4 when the action sets no ``maxRetries``); form variables are *not*
rendered here — the handler renders the templates from the instance's form
data as it is when the job runs (C-5).

:func:`enqueue_action` works in the caller's transaction (usually an engine
step, instance row locked) and also records the engine trace row of the
enqueue (E-8) and the ticket's move to ``pending``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import ValidationError
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.actions.runner import SYSTEM_ACTOR
from flowledger.compensation.errors import ActionInvalid
from flowledger.compensation.tickets import set_action_status
from flowledger.db.compensation_schema import ActionStatus
from flowledger.definitions.model import CompensationAction
from flowledger.engine.write_buffer import add_trace
from flowledger.ledger.driver.protocol import LedgerDriver
from flowledger.ledger.models import JobSpec
from flowledger.ledger.types import JobType
from flowledger.states import Pool

JOB_TYPE = "compensation_action"
COMPENSATION_ACTION_TYPE = JobType(JOB_TYPE, Pool.OUTBOUND, max_attempts=4)
DEFAULT_MAX_ATTEMPTS = 4  # C-5: maxRetries unset -> 3 retries after the first attempt


def parse_action(document: dict[str, Any] | None) -> CompensationAction:
    """The C-4 action of a document (camelCase as in a definition);
    :class:`ActionInvalid` when there is none or it is not valid."""
    if not document:
        raise ActionInvalid("the ticket has no compensation action", field="actionPayload")
    try:
        return CompensationAction.model_validate(document)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise ActionInvalid(
            f"the compensation action is not valid: {first.get('msg', 'invalid')}",
            field="actionPayload",
        ) from None


def action_document(action: CompensationAction) -> dict[str, Any]:
    """The action as stored in a ticket and a job payload (camelCase)."""
    return action.model_dump(mode="json", by_alias=True, exclude_defaults=True)


def max_attempts_for(action: CompensationAction) -> int:
    """C-5: ``maxRetries + 1``, or 4 when unset."""
    return DEFAULT_MAX_ATTEMPTS if action.max_retries is None else action.max_retries + 1


async def enqueue_action(
    conn: AsyncConnection,
    *,
    ticket_id: int,
    tenant_id: str,
    instance_id: int,
    trace_id: str,
    node_key: str,
    action: dict[str, Any],
    error: str | None,
    now: datetime,
    ledger: LedgerDriver,
    idempotency_key: str | None = None,
) -> int:
    """Enqueue (through ``ledger``) the ``compensation_action`` job of ticket ``ticket_id`` and
    set the ticket's action status to ``pending`` with the job's id.
    Returns the job id; an ``idempotency_key`` that already names a job
    returns that job and changes nothing."""
    parsed = parse_action(action)
    document = action_document(parsed)
    result = await ledger.job_insert(
        conn,
        JobSpec(
            type=COMPENSATION_ACTION_TYPE,
            payload={
                "ticketId": ticket_id,
                "instanceId": instance_id,
                "nodeKey": node_key,
                "error": error,
                "action": document,
            },
            max_attempts=max_attempts_for(parsed),
            idempotency_key=idempotency_key,
            trace_id=trace_id,
            tenant_id=tenant_id,
            instance_id=instance_id,
            node_key=node_key,
        ),
        now=now,
    )
    if not result.created:
        return result.job_id
    await add_trace(  # with the step's other trace rows, in order
        conn,
        {
            "instance_id": instance_id,
            "trace_id": trace_id,
            "event": "job_enqueued",
            "node_key": node_key,
            "token_id": None,
            "task_id": None,
            "job_id": result.job_id,
            "detail": {"type": JOB_TYPE, "ticketId": ticket_id, "action": parsed.type},
            "created_at": now,
        },
    )
    await set_action_status(
        conn,
        ticket_id,
        ActionStatus.PENDING,
        actor=SYSTEM_ACTOR,
        now=now,
        message=f"{parsed.type} action enqueued as job {result.job_id}",
        detail={"jobId": result.job_id, "maxAttempts": max_attempts_for(parsed)},
        action_job_id=result.job_id,
        action_payload=document,
    )
    return result.job_id
