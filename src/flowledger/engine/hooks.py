"""The engine's hooks (SPEC C-1, C-3, C-9): what a higher layer plugs into a
step — the node-failure policy, what runs when a repair task is handled, and
what runs when an instance ends. An :class:`EngineHooks` value is given to
:class:`~flowledger.engine.Engine` when it is built and every step carries
it; there is no process-wide hook. ``EngineHooks()`` (:data:`NO_HOOKS`) is an
engine without failure policies: a failed node follows the built-in
behaviour of :mod:`flowledger.engine.node_failures`. The compensation
package builds the hooks that add them
(:func:`flowledger.compensation.policies.compensation_hooks`).

The hooks are generic in the step they are called with (``StepT``): this
module sits below :mod:`~flowledger.engine.step` and imports nothing that
knows a step — the step declares ``hooks: EngineHooks[Step]``, and the
other values a hook sees (:class:`~flowledger.engine.values.Token`,
:class:`~flowledger.engine.values.NodeFailure`) live below it too (issue 28
item 7: no import cycle, not even one hidden under ``TYPE_CHECKING``)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeAlias, TypeVar

from sqlalchemy import ColumnElement

from flowledger.definitions.model import Node
from flowledger.engine.values import NodeFailure, Token
from flowledger.states import InstanceStatus

StepT = TypeVar("StepT")

NodeFailureHook: TypeAlias = Callable[
    [StepT, Token, Node, NodeFailure], Awaitable[list[Token] | None]
]
RepairHandledHook: TypeAlias = Callable[[StepT, int], Awaitable[object]]
InstanceEndedHook: TypeAlias = Callable[[StepT, InstanceStatus], Awaitable[object]]


@dataclass(frozen=True)
class EngineHooks(Generic[StepT]):
    """The hooks of one engine, called with its steps (``StepT`` is
    :class:`~flowledger.engine.step.Step`). ``node_failure`` decides a final
    node failure first (``None`` from it leaves the built-in behaviour);
    ``repair_handled`` runs when a repair (``catch``) task is handled through
    the task actions; ``instance_ended`` runs inside the step that ends an
    instance, after its tasks are closed and its tokens consumed — only when
    ``instance_ended_when`` (a condition on the ending instance's row,
    correlated to ``workflow_instances``; read with the row's own update,
    in the same round trip on PostgreSQL) holds, or always without one."""

    node_failure: NodeFailureHook[StepT] | None = None
    repair_handled: RepairHandledHook[StepT] | None = None
    instance_ended: InstanceEndedHook[StepT] | None = None
    instance_ended_when: ColumnElement[bool] | None = None
    name: str = "none"

    @property
    def has_failure_policies(self) -> bool:
        return self.node_failure is not None


NO_HOOKS: EngineHooks[Any] = EngineHooks()
