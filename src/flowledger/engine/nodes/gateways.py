"""The gateways (SPEC E-3, E-4): exclusive takes the first matching edge,
else the default, else the node fails (E-3: the instance never silently
ends); parallel forks all outgoing edges and joins all incoming; inclusive
forks every matching edge and its join waits only for the branches actually
taken (the count is kept on the fork frame)."""

from __future__ import annotations

from flowledger.definitions.expressions import ExpressionError, compile_condition
from flowledger.definitions.model import Edge, Node
from flowledger.engine.moves import fail, follow
from flowledger.engine.step import Step
from flowledger.engine.tokens import (
    Token,
    fork_and_parked,
    fork_tokens,
    join_tokens,
    park_token,
)


def _matches(edge: Edge, step: Step) -> bool:
    if edge.condition is None:
        return False
    return compile_condition(edge.condition).evaluate(step.form, {"now": step.now.isoformat()})


async def enter_exclusive(step: Step, token: Token, node: Node) -> list[Token]:
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


async def enter_gateway(step: Step, token: Token, node: Node) -> list[Token]:
    """A parallel or inclusive gateway: join (two or more incoming edges),
    then fork."""
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
