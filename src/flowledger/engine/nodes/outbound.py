"""The outbound nodes' entry (SPEC X-1, X-2, X-4): ``trigger`` and
``external_approval``. Entering a node (inside the running step):

- **trigger** — a ``trigger`` task, ``waiting``, assignee ``system``, holds the
  token; a ``trigger_dispatch`` job (idempotencyKey ``trigger:<taskId>``)
  carries the call *rendered now* from the form (method, url, headers, body,
  idempotent, kind, connectorId, mode, resultMapping), so a retry resends the
  same request with the same ``X-Idempotency-Key``. Its budget is
  ``maxRetries + 1`` attempts; unset, ``maxRetries`` is 0 under ``onFailure:
  continue`` (fail fast and pass) and 3 otherwise (4 attempts, the same
  default as compensation actions, C-5).
- **external_approval** — an ``external_approval`` task, ``pending``,
  assignee ``external``, and an ``external_dispatch`` job (idempotencyKey
  ``external:<taskId>``, budget ``maxRetries + 1`` or the type's 5) whose
  JSON body carries ``taskId``, ``instanceId``, ``nodeKey``,
  ``definitionKey``, ``callbackPath`` and ``decisions``; a ``bodyTemplate``
  rendering to a JSON object adds its keys (ours win), any other rendering
  goes under ``data``.

A call that cannot be rendered (:mod:`~flowledger.engine.outbound_requests`:
a URL the SSRF guard refuses by its syntax, a header that cannot be sent) is
a node failure at once (``trigger_call_invalid`` /
``external_dispatch_invalid``).

What follows the job's call (success, failure, the external decision, the
dispatch fallback) is :mod:`flowledger.engine.outbound_nodes`, above the
runner; this module is below it and returns the tokens that keep moving.
"""

from __future__ import annotations

from typing import Any

from flowledger.definitions.model import Node
from flowledger.engine.job_types import engine_job_type
from flowledger.engine.node_failures import node_failed
from flowledger.engine.outbound_requests import (
    HeaderInvalid,
    render_call,
    render_dispatch,
    template_values,
    trigger_max_attempts,
)
from flowledger.engine.step import Step
from flowledger.engine.tasks import SYSTEM, create_task, finish_task
from flowledger.engine.tokens import Token
from flowledger.engine.values import NodeFailure
from flowledger.ledger.models import JobSpec
from flowledger.outbound.ssrf import OutboundRefused
from flowledger.states import TaskStatus

EXTERNAL = "external"


async def _enqueue(
    step: Step,
    job_type: str,
    *,
    task_id: int,
    node: Node,
    payload: dict[str, Any],
    idempotency_key: str,
    max_attempts: int | None,
) -> int:
    result = await step.insert_job_now(
        JobSpec(
            type=engine_job_type(job_type),
            payload=payload,
            max_attempts=max_attempts,
            idempotency_key=idempotency_key,
            trace_id=step.trace_id,
            tenant_id=step.instance["tenant_id"],
            instance_id=step.instance_id,
            task_id=task_id,
            node_key=node.key,
        ),
    )
    await step.trace(
        "job_enqueued",
        node_key=node.key,
        task_id=task_id,
        job_id=result.job_id,
        detail={"type": job_type},
    )
    return result.job_id


async def enter_trigger(step: Step, token: Token, node: Node) -> list[Token]:
    assert node.call is not None
    task_id = await create_task(
        step,
        node_key=node.key,
        token_id=token.id,
        kind="trigger",
        status=TaskStatus.WAITING,
        assignee=SYSTEM,
    )
    try:
        request = render_call(node.call, template_values(step, node, task_id))
    except (OutboundRefused, HeaderInvalid) as exc:
        await finish_task(
            step, task_id, status=TaskStatus.COMPLETED, action="reject", comment=str(exc), by=SYSTEM
        )
        failure = NodeFailure("trigger_call_invalid", str(exc), None, retries_exhausted=False)
        return await node_failed(step, token, node, failure)
    await _enqueue(
        step,
        "trigger_dispatch",
        task_id=task_id,
        node=node,
        payload={"taskId": task_id, "request": request},
        idempotency_key=f"trigger:{task_id}",
        max_attempts=trigger_max_attempts(node),
    )
    return []


async def enter_external(step: Step, token: Token, node: Node) -> list[Token]:
    task_id = await create_task(
        step,
        node_key=node.key,
        token_id=token.id,
        kind="external_approval",
        status=TaskStatus.PENDING,
        assignee=EXTERNAL,
    )
    try:
        request = render_dispatch(step, node, task_id)
    except (OutboundRefused, HeaderInvalid) as exc:
        await finish_task(
            step, task_id, status=TaskStatus.CANCELED, action=None, comment=str(exc), by=SYSTEM
        )
        failure = NodeFailure("external_dispatch_invalid", str(exc), None, retries_exhausted=False)
        return await node_failed(step, token, node, failure)
    await _enqueue(
        step,
        "external_dispatch",
        task_id=task_id,
        node=node,
        payload={"taskId": task_id, "request": request},
        idempotency_key=f"external:{task_id}",
        max_attempts=None if node.max_retries is None else node.max_retries + 1,
    )
    return []
