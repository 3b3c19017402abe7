"""The system waits (SPEC E-3, E-5): ``delay`` holds its token on a
``delay`` task, ``waiting``, until its ``delay_wake`` job (at ``duration``
from now, or at ``until`` — an ISO timestamp or a ``form.*`` field holding
one); ``subprocess`` holds its token on a ``subprocess`` task until the
child started by its ``subprocess_spawn`` job ends. A wake time that cannot
be computed, or lies outside the representable range once in UTC
(``definitions.rules.until_instant``, the check deploy applies to a literal
``until``), is a node failure (``bad_delay``)."""

from __future__ import annotations

from datetime import UTC, datetime

from flowledger.definitions.expressions import ExpressionError, evaluate_value
from flowledger.definitions.model import Node
from flowledger.definitions.rules import until_instant
from flowledger.engine.moves import fail
from flowledger.engine.step import Step
from flowledger.engine.tasks import SYSTEM, create_task
from flowledger.engine.tokens import Token
from flowledger.states import TaskStatus


def _delay_due(step: Step, node: Node) -> datetime:
    if node.duration is not None:
        return step.now + node.duration
    assert node.until is not None
    text = node.until
    if text.startswith("form."):
        text = str(evaluate_value(text, step.form, None))
    return until_instant(text, step.now.tzinfo or UTC)


async def enter_delay(step: Step, token: Token, node: Node) -> list[Token]:
    try:
        due = _delay_due(step, node)
    except (ValueError, TypeError, ExpressionError) as exc:
        return await fail(step, token, node, "bad_delay", f"cannot compute the wake time: {exc}")
    task_id = await create_task(
        step,
        node_key=node.key,
        token_id=token.id,
        kind="delay",
        status=TaskStatus.WAITING,
        assignee=SYSTEM,
        due_at=due,
    )
    await step.enqueue(
        "delay_wake", task_id=task_id, node_key=node.key, run_at=due, payload={"taskId": task_id}
    )
    return []


async def enter_subprocess(step: Step, token: Token, node: Node) -> list[Token]:
    task_id = await create_task(
        step,
        node_key=node.key,
        token_id=token.id,
        kind="subprocess",
        status=TaskStatus.WAITING,
        assignee=SYSTEM,
    )
    await step.enqueue(
        "subprocess_spawn",
        task_id=task_id,
        node_key=node.key,
        payload={"taskId": task_id},
        idempotency_key=f"spawn:{task_id}",
    )
    return []
