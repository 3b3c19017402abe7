"""What happens when a trigger, external approval or subprocess node fails
(SPEC X-1, X-2, C-1): the one seam between the engine and failure policies.

:func:`node_failed` is called inside the failing step (instance row locked)
after the caller has closed the node's own wait task. It first asks the step's
``node_failure`` hook (:class:`~flowledger.engine.hooks.EngineHooks`, given to
the engine when it is built; the compensation hooks plug in
here: compensate, fallback, notify, terminate, Saga rollback, tickets); a
hook returning ``None`` leaves the failure to the built-in behaviour:

- effective action ``continue`` — ``failurePolicy.action``, else a trigger's
  ``onFailure`` — records the failure (``node_failed`` trace row with
  ``policy: continue``, a ``node.failed`` event) and leaves the node: the flow
  passes it and the instance shows no error;
- anything else (``retry`` once its attempts are spent, no policy, or a policy
  whose action only the hook implements) is :func:`moves.fail
  <flowledger.engine.moves.fail>`: the token follows the node's exception
  edge to a catch node, or stays at the node with the error on the instance.

Either way the returned tokens keep moving: the caller runs them
(``runner.run``) or, inside a node's ``enter``, returns them. This module
sits below the runner and the node kinds (:mod:`flowledger.engine.nodes`),
which call it; :class:`NodeFailure` is :mod:`~flowledger.engine.values`'
(re-exported here).

L-17 is not a node failure: an unsafe call whose outcome is unknown leaves the
job dead and the token at the node, and never reaches this module.
"""

from __future__ import annotations

from flowledger.definitions.model import Node
from flowledger.engine.moves import fail, leave
from flowledger.engine.step import Step
from flowledger.engine.values import NodeFailure as NodeFailure
from flowledger.engine.values import Token
from flowledger.engine.write_buffer import flush_jobs


async def repair_handled(step: Step, task_id: int) -> None:
    """Tell the step's ``repair_handled`` hook that repair task ``task_id``
    was handled (C-3, C-9: the compensation hooks close its pending ticket)."""
    if step.hooks.repair_handled is not None:
        await flush_jobs(step.conn)  # a hook may read or enqueue jobs
        await step.hooks.repair_handled(step, task_id)


def effective_action(node: Node) -> str | None:
    """The failure action that applies to ``node``: its ``failurePolicy``
    action, else (for a trigger) its ``onFailure``, else None (C-1, X-1)."""
    if node.failure_policy is not None:
        return node.failure_policy.action
    if node.type == "trigger":
        return node.on_failure
    return None


async def node_failed(step: Step, token: Token, node: Node, failure: NodeFailure) -> list[Token]:
    """Apply the failure of ``node`` (whose ``token`` is active at it); return
    the tokens that keep moving."""
    hook = step.hooks.node_failure
    if hook is not None:
        await flush_jobs(step.conn)  # a hook may read or enqueue jobs
        handled = await hook(step, token, node, failure)
        if handled is not None:
            return handled
    if effective_action(node) == "continue":
        detail = {
            "code": failure.code,
            "error": failure.message,
            "policy": "continue",
            "retriesExhausted": failure.retries_exhausted,
        }
        await step.trace(
            "node_failed",
            node_key=node.key,
            token_id=token.id,
            job_id=failure.job_id,
            detail=detail,
        )
        await step.emit("node.failed", {"nodeKey": node.key, **detail})
        return await leave(step, token, node)
    return await fail(step, token, node, failure.code, failure.message)
