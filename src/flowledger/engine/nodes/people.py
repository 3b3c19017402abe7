"""The nodes that give people tasks (SPEC E-3, E-5): ``approval`` and
``handle`` make a pending task per resolved assignee (with a
``task_timeout`` job when the node has a timeout, or the first job of its
deadline's escalation chain: :mod:`flowledger.engine.deadlines`) and hold
the token; ``cc``
makes a ``cc`` task per assignee and passes on; ``catch`` (a repair node,
reached along an error edge) makes pending tasks for its assignees, or for
``admin`` when none resolves."""

from __future__ import annotations

from flowledger.definitions.model import Node
from flowledger.engine import deadlines
from flowledger.engine.moves import fail, leave
from flowledger.engine.step import Step
from flowledger.engine.tasks import create_task, resolve_assignees
from flowledger.engine.tokens import Token
from flowledger.states import TaskStatus

ADMIN = "admin"


async def enter_human(step: Step, token: Token, node: Node) -> list[Token]:
    people = await resolve_assignees(step, node.assignees)
    if not people:
        return await fail(
            step, token, node, "no_assignee", f"no assignee could be resolved for {node.key!r}"
        )
    due_at = step.now + node.timeout.after if node.timeout is not None else None
    if node.deadline is not None:
        due_at = deadlines.due_time(step, node.deadline)
    for person in people:
        task_id = await create_task(
            step,
            node_key=node.key,
            token_id=token.id,
            kind=node.type,
            status=TaskStatus.PENDING,
            assignee=person,
            due_at=due_at,
        )
        if node.deadline is not None:
            await deadlines.schedule(step, node, task_id, due_at)
        elif due_at is not None:
            await step.enqueue(
                "task_timeout",
                task_id=task_id,
                node_key=node.key,
                run_at=due_at,
                payload={"taskId": task_id},
            )
    return []


async def enter_cc(step: Step, token: Token, node: Node) -> list[Token]:
    for person in await resolve_assignees(step, node.assignees):
        await create_task(
            step,
            node_key=node.key,
            token_id=token.id,
            kind="cc",
            status=TaskStatus.CC,
            assignee=person,
        )
    return await leave(step, token, node)


async def enter_catch(step: Step, token: Token, node: Node) -> list[Token]:
    people = await resolve_assignees(step, node.assignees) or [ADMIN]
    for person in people:
        await create_task(
            step,
            node_key=node.key,
            token_id=token.id,
            kind="catch",
            status=TaskStatus.PENDING,
            assignee=person,
        )
    return []
