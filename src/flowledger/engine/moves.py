"""How a token leaves a node (SPEC E-3, E-4), inside the caller's step:
along an edge (:func:`follow`), along the node's first outgoing edge once
the node is done (:func:`leave`), or — when the node fails — along its error
edge to a catch node, else not at all (:func:`fail`: the failure is in the
engine trace and the outbox, and the instance shows the error).

These are the moves every node kind (:mod:`flowledger.engine.nodes`), the
failure seam (:mod:`~flowledger.engine.node_failures`) and the steps after a
wait make; they return the tokens that keep moving, which the caller hands
to :func:`flowledger.engine.runner.run`. They sit below the runner and the
node kinds (issue 28 item 7)."""

from __future__ import annotations

from flowledger.definitions.model import Edge, Node
from flowledger.engine.step import Step
from flowledger.engine.tokens import Token, move_token


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
