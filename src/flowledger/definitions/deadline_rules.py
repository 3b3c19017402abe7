"""Rules about a human node's ``deadline`` (issue 31 item 4): where it may
appear, its due time (``due`` xor ``dueField``, a form field the definition
declares), and its escalation chain (known step kinds, times after the due
time strictly increasing, a transfer's target well-formed). Whether a named
user or role exists is checked at deploy (``engine.deployments``).

Also owns :func:`parse_target` (what a transfer's ``to`` names), used by
deploy and by the escalation step at run time. Every problem names the node
and the field (``deadline.escalation[1].to``)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import timedelta

from flowledger.definitions.model import ESCALATION_ACTIONS, Node, ProcessDefinition
from flowledger.definitions.problems import Problem

DEADLINE_TYPES = frozenset({"approval", "handle"})
DATE_FIELD_TYPES = frozenset({"date", "string"})


def parse_target(text: str) -> tuple[str, str] | None:
    """``manager`` → ("manager", ""), ``user:bob`` → ("user", "bob"),
    ``role:finance`` → ("role", "finance"); None when it is none of these."""
    if text == "manager":
        return ("manager", "")
    kind, sep, name = text.partition(":")
    if sep and kind in ("user", "role") and name.strip() == name and name:
        return (kind, name)
    return None


def deadline_problems(defn: ProcessDefinition, node: Node) -> Iterator[Problem]:
    deadline = node.deadline
    if deadline is None:
        return

    def problem(code: str, message: str, field: str) -> Problem:
        return Problem(code, f"node {node.key!r}: {message}", node=node.key, field=field)

    if node.type not in DEADLINE_TYPES:
        yield problem(
            "deadline_not_allowed",
            f"a deadline applies to approval and handle nodes, not {node.type}",
            "deadline",
        )
        return
    if node.timeout is not None:
        yield problem(
            "deadline_with_timeout",
            "a node takes a timeout or a deadline, not both",
            "deadline",
        )
    if deadline.due is None and deadline.due_field is None:
        yield problem("deadline_missing_due", "a deadline needs due or dueField", "deadline.due")
    elif deadline.due is not None and deadline.due_field is not None:
        yield problem(
            "deadline_ambiguous_due", "a deadline takes due or dueField, not both", "deadline.due"
        )
    if deadline.due is not None and deadline.due <= timedelta(0):
        yield problem("non_positive_duration", "deadline.due must be positive", "deadline.due")
    if deadline.due_field is not None:
        fields = {f.key: f for f in defn.form.fields}
        declared = fields.get(deadline.due_field)
        if declared is None:
            yield problem(
                "deadline_field_unknown",
                f"dueField {deadline.due_field!r} is not a field of the form",
                "deadline.dueField",
            )
        elif declared.type not in DATE_FIELD_TYPES:
            yield problem(
                "deadline_field_not_a_date",
                f"dueField {deadline.due_field!r} is a {declared.type} field, "
                "not a date or string holding an ISO date-time",
                "deadline.dueField",
            )
    yield from _chain_problems(node, problem)


def _chain_problems(node: Node, make: Callable[[str, str, str], Problem]) -> Iterator[Problem]:
    assert node.deadline is not None
    previous: timedelta | None = None
    for i, esc in enumerate(node.deadline.escalation):
        at = f"deadline.escalation[{i}]"
        if esc.action not in ESCALATION_ACTIONS:
            allowed = ", ".join(sorted(ESCALATION_ACTIONS))
            yield make(
                "escalation_unknown_action",
                f"{at}.action {esc.action!r} is not one of {allowed}",
                f"{at}.action",
            )
        if esc.after < timedelta(0):
            yield make(
                "non_positive_duration",
                f"{at}.after must not be negative (it counts from the due time)",
                f"{at}.after",
            )
        elif previous is not None and esc.after <= previous:
            yield make(
                "escalation_not_increasing",
                f"{at}.after must be later than the step before it",
                f"{at}.after",
            )
        previous = esc.after
        if esc.action == "transfer":
            if not esc.to:
                yield make(
                    "escalation_target_missing",
                    f"{at}: a transfer needs to (manager, user:<id> or role:<name>)",
                    f"{at}.to",
                )
            elif parse_target(esc.to) is None:
                yield make(
                    "escalation_target_invalid",
                    f"{at}.to {esc.to!r} is not manager, user:<id> or role:<name>",
                    f"{at}.to",
                )
        elif esc.to is not None:
            yield make(
                "field_not_applicable", f"{at}.to applies to a transfer step only", f"{at}.to"
            )
