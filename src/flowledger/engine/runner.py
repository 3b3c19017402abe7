"""Run to the next wait state (SPEC E-3, E-4): move tokens through the frozen
definition inside the caller's step until every moving token rests at a wait
state (human task, delay, subprocess, trigger, external approval, join) or is
consumed at an end.

What entering each type of node does is its node kind's
(:mod:`flowledger.engine.nodes`); this module, above them, holds the table
from node type to ``enter`` function and dispatches each token through it.
How a token leaves a node — along an edge, or along its error edge when the
node fails — is :mod:`~flowledger.engine.moves`. A node that fails follows
its error edge to a catch node if it has one; otherwise its token stays
where it is, the failure is in the engine trace and the outbox, and the
instance shows the error."""

from __future__ import annotations

from collections import deque
from collections.abc import Awaitable, Callable

from flowledger.definitions.model import Node
from flowledger.engine.errors import EngineError
from flowledger.engine.nodes.gateways import enter_exclusive, enter_gateway
from flowledger.engine.nodes.outbound import enter_external, enter_trigger
from flowledger.engine.nodes.people import enter_catch, enter_cc, enter_human
from flowledger.engine.nodes.start_end import enter_end, enter_start
from flowledger.engine.nodes.waits import enter_delay, enter_subprocess
from flowledger.engine.step import Step
from flowledger.engine.tokens import Token

# a definition looping without a wait state is refused at deploy (definitions.hazards);
# this guard stops one deployed before that, 10x cheaper than the 10,000 it was
MAX_STEPS = 1_000

Enter = Callable[[Step, Token, Node], Awaitable[list[Token]]]

# node type → what entering it does (returns the tokens that keep moving)
_ENTER: dict[str, Enter] = {
    "start": enter_start,
    "end": enter_end,
    "approval": enter_human,
    "handle": enter_human,
    "cc": enter_cc,
    "catch": enter_catch,
    "delay": enter_delay,
    "subprocess": enter_subprocess,
    "trigger": enter_trigger,
    "external_approval": enter_external,
    "exclusive": enter_exclusive,
    "parallel": enter_gateway,
    "inclusive": enter_gateway,
}


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
