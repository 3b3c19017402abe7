"""Signed callbacks from external systems (SPEC X-1 async triggers, X-2
external approvals), mounted at ``/api/workflows/callbacks``.

No bearer token: a callback is authenticated by its HMAC-SHA256 signature
(:mod:`flowledger.outbound.signing`, headers ``X-Flowledger-Timestamp`` and
``X-Flowledger-Signature`` over the timestamp, the request line
``"POST <path>"`` and the raw body bytes — so a signed callback is valid for
its own task or job only) with
``FLOWLEDGER_CALLBACK_SECRET``, within ``FLOWLEDGER_SIGNATURE_TOLERANCE_S`` of
the server's time. While the secret is unset every callback is refused with
503 ``callback_secret_unset``; a missing or wrong signature is 401 with the
reason as its code (``signature_missing``, ``signature_mismatch``,
``timestamp_invalid``, ``timestamp_out_of_tolerance``) and changes nothing.
The signature is the route's access declaration (``SIGNED_CALLBACK`` of
:mod:`flowledger.api.route_access`), checked before the body is parsed; the
body is then validated against its declared model like any other route's.

- ``POST /callbacks/external/{taskId}`` ``{decision: approve|reject,
  comment?, decidedBy?}`` decides an external approval task.
- ``POST /callbacks/trigger/{jobId}`` ``{status: succeeded|failed, result?,
  error?}`` finishes an async trigger (``result`` feeds the node's
  resultMapping as ``response.body``).

Both answer 200 with the recorded decision; a repeated or late callback gets
the same record with ``duplicate: true`` and changes nothing. A task that
ended without a recorded decision (instance canceled, task skipped) is 409
``task_not_pending``; an unknown subject is 404. Accepted callbacks and
refusals after a valid signature are written to the operation audit with the
actor ``external`` (or ``external:<decidedBy>``): an accepted one in the
transaction of its step (:func:`flowledger.engine.callbacks.answer_external`,
:func:`~flowledger.engine.callbacks.answer_trigger`).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal, Self

from fastapi import APIRouter, Path

from flowledger.api.deps import Ctx
from flowledger.api.route_access import SIGNED_CALLBACK, GuardedRoute
from flowledger.api.schemas import (
    MAX_ID,
    ApiModel,
    ErrorPublic,
    JsonObject,
    Reason,
    RequestModel,
    UserId,
)
from flowledger.engine import callbacks
from flowledger.engine.callback_records import CallbackRecord

router = APIRouter(prefix="/callbacks", tags=["callbacks"], route_class=GuardedRoute)

TaskId = Annotated[int, Path(alias="taskId", ge=1, le=MAX_ID)]
JobId = Annotated[int, Path(alias="jobId", ge=1, le=MAX_ID)]


# ------------------------------------------------------------------ models


class ExternalDecisionCreate(RequestModel):
    decision: Literal["approve", "reject"]
    comment: Reason | None = None
    decided_by: UserId | None = None


class TriggerResultCreate(RequestModel):
    status: Literal["succeeded", "failed"]
    result: JsonObject | None = None
    error: Reason | None = None


class ExternalDecisionPublic(ApiModel):
    task_id: int
    instance_id: int
    decision: str
    source: str
    comment: str | None = None
    decided_by: str | None = None
    received_at: datetime
    duplicate: bool

    @classmethod
    def of(cls, record: CallbackRecord, duplicate: bool) -> Self:
        return cls(
            task_id=record.task_id,
            instance_id=record.instance_id,
            decision=record.outcome,
            source=record.source,
            comment=record.comment,
            decided_by=record.decided_by,
            received_at=record.received_at,
            duplicate=duplicate,
        )


class TriggerResultPublic(ApiModel):
    job_id: int
    task_id: int
    instance_id: int
    status: str
    received_at: datetime
    duplicate: bool
    outcome: dict[str, Any] = {}

    @classmethod
    def of(cls, answer: callbacks.CallbackAnswer) -> Self:
        record = answer.record
        return cls(
            job_id=record.subject_id,
            task_id=record.task_id,
            instance_id=record.instance_id,
            status=record.outcome,
            received_at=record.received_at,
            duplicate=answer.duplicate,
            outcome=answer.outcome,
        )


# ----------------------------------------------------------------- helpers

_RESPONSES: dict[int | str, dict[str, Any]] = {
    503: {"model": ErrorPublic, "description": "FLOWLEDGER_CALLBACK_SECRET is not set"},
}


# ------------------------------------------------------------------ routes


@router.post(
    "/external/{taskId}",
    response_model=ExternalDecisionPublic,
    responses=_RESPONSES,
    dependencies=[SIGNED_CALLBACK],
)
async def external_decision(
    task_id: TaskId, body: ExternalDecisionCreate, ctx: Ctx
) -> ExternalDecisionPublic:
    """The external system's decision on an external approval task (X-2)."""
    answer = await callbacks.answer_external(
        ctx,
        ctx.engine,
        task_id,
        body.decision,
        comment=body.comment,
        decided_by=body.decided_by,
    )
    return ExternalDecisionPublic.of(answer.record, answer.duplicate)


@router.post(
    "/trigger/{jobId}",
    response_model=TriggerResultPublic,
    responses=_RESPONSES,
    dependencies=[SIGNED_CALLBACK],
)
async def trigger_result(job_id: JobId, body: TriggerResultCreate, ctx: Ctx) -> TriggerResultPublic:
    """The result of an async trigger's call (X-1)."""
    answer = await callbacks.answer_trigger(
        ctx, ctx.engine, job_id, body.status, result=body.result, error=body.error
    )
    return TriggerResultPublic.of(answer)
