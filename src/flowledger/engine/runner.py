"""Run to the next wait state (SPEC E-3, E-4): move tokens through the frozen
definition inside the caller's step until every moving token rests at a wait
state (human task, delay, subprocess, trigger, external approval, join) or is
consumed at an end. Trigger and external approval nodes live in
:mod:`~flowledger.engine.outbound_nodes` (SPEC X-1, X-2).

Each node type has an ``enter`` function returning the tokens that keep
moving. Gateways: exclusive takes the first matching edge, else the default,
else the node fails (E-3: the instance never silently ends); parallel forks
all outgoing edges and joins all incoming; inclusive forks every matching
edge and its join waits only for the branches actually taken (the count is
kept on the fork frame). A node that fails follows its error edge to a catch
node if it has one; otherwise its token stays where it is, the failure is in
the engine trace and the outbox, and the instance shows the error."""

from __future__ import annotations

from collections import deque
from collections.abc import Awaitable, Callable
from datetime import datetime

from flowledger.definitions.expressions import (
    ExpressionError,
    compile_condition,
    evaluate_value,
)
from flowledger.definitions.model import Edge, Node
from flowledger.engine import lifecycle
from flowledger.engine.errors import EngineError
from flowledger.engine.step import Step
from flowledger.engine.tasks import SYSTEM, create_task, resolve_assignees
from flowledger.engine.tokens import (
    Token,
    fork_and_parked,
    fork_tokens,
    join_tokens,
    move_token,
    park_token,
)
from flowledger.states import TaskStatus

# a definition looping without a wait state is refused at deploy (definitions.hazards);
# this guard stops one deployed before that, 10x cheaper than the 10,000 it was
MAX_STEPS = 1_000
ADMIN = "admin"

Enter = Callable[[Step, Token, Node], Awaitable[list[Token]]]


async def run(step: Step, tokens: list[Token]) -> None:
    """Move ``tokens`` (active, each at the node it is entering) to wait states."""
    queue = deque(tokens)
    steps = 0
    while queue and not step.finished:
        steps += 1
        if steps > MAX_STEPS:
            raise EngineError("the process loops without reaching a wait state")
        token = queue.popleft()
        node = step.defn.node(token.node_key)
        await step.trace("node_entered", node_key=node.key, token_id=token.id)
        queue.extend(await _ENTER[node.type](step, token, node))


async def follow(step: Step, token: Token, edge: Edge) -> Token:
    await step.trace(
        "node_left", node_key=token.node_key, token_id=token.id, detail={"to": edge.to}
    )
    await move_token(step, token, edge.to)
    return token


async def leave(step: Step, token: Token, node: Node) -> list[Token]:
    """Continue from a node that is done: along its (first) outgoing edge."""
    edges = step.defn.outgoing(node.key)
    if not edges:
        return await fail(
            step, token, node, "no_outgoing_edge", f"node {node.key!r} has no outgoing edge"
        )
    return [await follow(step, token, edges[0])]


async def fail(step: Step, token: Token, node: Node, code: str, message: str) -> list[Token]:
    await step.trace(
        "node_failed", node_key=node.key, token_id=token.id, detail={"code": code, "error": message}
    )
    await step.emit("node.failed", {"nodeKey": node.key, "code": code, "error": message})
    await step.set_instance(error=f"{node.key}: {message}")
    error_edge = step.defn.error_edge(node.key)
    if error_edge is not None:
        return [await follow(step, token, error_edge)]
    return []


# ----------------------------------------------------------------- node types


async def _start(step: Step, token: Token, node: Node) -> list[Token]:
    return await leave(step, token, node)


async def _end(step: Step, token: Token, node: Node) -> list[Token]:
    await step.trace("token_consumed", node_key=node.key, token_id=token.id)
    await lifecycle.finish_with_last_token(step, token.id)
    return []


async def _human(step: Step, token: Token, node: Node) -> list[Token]:
    people = await resolve_assignees(step, node.assignees)
    if not people:
        return await fail(
            step, token, node, "no_assignee", f"no assignee could be resolved for {node.key!r}"
        )
    due_at = step.now + node.timeout.after if node.timeout is not None else None
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
        if due_at is not None:
            await step.enqueue(
                "task_timeout",
                task_id=task_id,
                node_key=node.key,
                run_at=due_at,
                payload={"taskId": task_id},
            )
    return []


async def _cc(step: Step, token: Token, node: Node) -> list[Token]:
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


async def _catch(step: Step, token: Token, node: Node) -> list[Token]:
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


def _delay_due(step: Step, node: Node) -> datetime:
    if node.duration is not None:
        return step.now + node.duration
    assert node.until is not None
    text = node.until
    if text.startswith("form."):
        text = str(evaluate_value(text, step.form, None))
    due = datetime.fromisoformat(text)
    return due if due.tzinfo else due.replace(tzinfo=step.now.tzinfo)


async def _delay(step: Step, token: Token, node: Node) -> list[Token]:
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


async def _subprocess(step: Step, token: Token, node: Node) -> list[Token]:
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


async def _trigger(step: Step, token: Token, node: Node) -> list[Token]:
    from flowledger.engine import outbound_nodes  # imports this module

    return await outbound_nodes.enter_trigger(step, token, node)


async def _external_approval(step: Step, token: Token, node: Node) -> list[Token]:
    from flowledger.engine import outbound_nodes  # imports this module

    return await outbound_nodes.enter_external(step, token, node)


def _matches(edge: Edge, step: Step) -> bool:
    if edge.condition is None:
        return False
    return compile_condition(edge.condition).evaluate(step.form, {"now": step.now.isoformat()})


async def _exclusive(step: Step, token: Token, node: Node) -> list[Token]:
    edges = step.defn.outgoing(node.key)
    try:
        chosen = next((e for e in edges if not e.default and _matches(e, step)), None)
    except ExpressionError as exc:
        return await fail(step, token, node, "condition_error", str(exc))
    if chosen is None:
        chosen = next((e for e in edges if e.default), None)
    if chosen is None:
        return await fail(
            step,
            token,
            node,
            "no_matching_condition",
            f"no condition of exclusive gateway {node.key!r} matched and it has no default edge",
        )
    await step.trace(
        "gateway_decided", node_key=node.key, token_id=token.id, detail={"to": chosen.to}
    )
    return [await follow(step, token, chosen)]


async def _join(step: Step, token: Token, node: Node) -> Token | None:
    """Park ``token`` at a join; return the merged token when the join fires."""
    if not token.fork_stack:
        return token  # not joining a fork: pass through
    frame_id = token.fork_stack[-1]
    fork, parked = await fork_and_parked(step, frame_id, node.key)
    if fork is None or fork.gateway != node.type:
        return token  # not joining a fork of this kind: pass through
    waiting = sorted([*parked, token], key=lambda t: t.id)
    fires = len(waiting) >= fork.expected
    if not fires:  # (the last arrival is consumed with the others at once)
        await park_token(step, token, node.key)
    await step.trace(
        "token_parked",
        node_key=node.key,
        token_id=token.id,
        detail={"arrived": len(waiting), "expected": fork.expected},
    )
    if not fires:
        return None
    merged = await join_tokens(step, waiting, node.key, token.fork_stack[:-1])
    await step.trace(
        "token_joined",
        node_key=node.key,
        token_id=merged.id,
        detail={"joined": [t.id for t in waiting]},
    )
    return merged


async def _fork(step: Step, token: Token, node: Node, edges: list[Edge]) -> list[Token]:
    branches = await fork_tokens(step, token, node.key, node.type, [edge.to for edge in edges])
    await step.trace(
        "token_forked",
        node_key=node.key,
        token_id=token.id,
        detail={"branches": [b.id for b in branches], "to": [e.to for e in edges]},
    )
    return branches


async def _gateway(step: Step, token: Token, node: Node) -> list[Token]:
    if len(step.defn.incoming(node.key)) >= 2:
        joined = await _join(step, token, node)
        if joined is None:
            return []
        token = joined
    edges = step.defn.outgoing(node.key)
    if not edges:
        return await fail(
            step, token, node, "no_outgoing_edge", f"gateway {node.key!r} has no outgoing edge"
        )
    if len(edges) == 1:
        return [await follow(step, token, edges[0])]
    if node.type == "inclusive":
        try:
            taken = [
                e for e in edges if not e.default and (e.condition is None or _matches(e, step))
            ]
        except ExpressionError as exc:
            return await fail(step, token, node, "condition_error", str(exc))
        if not taken:
            taken = [e for e in edges if e.default]
        if not taken:
            return await fail(
                step,
                token,
                node,
                "no_matching_condition",
                f"no branch of inclusive gateway {node.key!r} matched and it has no default edge",
            )
        edges = taken
    # A fork always pushes a frame, even for one branch taken, so that the
    # matching join counts exactly the branches of this fork.
    return await _fork(step, token, node, edges)


_ENTER: dict[str, Enter] = {
    "start": _start,
    "end": _end,
    "approval": _human,
    "handle": _human,
    "cc": _cc,
    "catch": _catch,
    "delay": _delay,
    "subprocess": _subprocess,
    "trigger": _trigger,
    "external_approval": _external_approval,
    "exclusive": _exclusive,
    "parallel": _gateway,
    "inclusive": _gateway,
}
