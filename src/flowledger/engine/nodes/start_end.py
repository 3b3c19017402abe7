"""The ``start`` and ``end`` nodes (SPEC E-3, E-4): a start passes its token
on; an end consumes it, and the last live token's end approves the instance
(:func:`~flowledger.engine.lifecycle.finish_with_last_token`)."""

from __future__ import annotations

from flowledger.definitions.model import Node
from flowledger.engine import lifecycle
from flowledger.engine.moves import leave
from flowledger.engine.step import Step
from flowledger.engine.tokens import Token


async def enter_start(step: Step, token: Token, node: Node) -> list[Token]:
    return await leave(step, token, node)


async def enter_end(step: Step, token: Token, node: Node) -> list[Token]:
    await step.trace("token_consumed", node_key=node.key, token_id=token.id)
    await lifecycle.finish_with_last_token(step, token.id)
    return []
