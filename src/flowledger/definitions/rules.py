"""Rules about one node's configuration (SPEC E-3, E-5, C-1, C-4, X-1, X-2).

Owns what each node type needs (assignees, a call, a dispatch, a wait, a
child definition), where timeouts and failure policies may appear, the
failure-policy targets, the expressions and templates inside a node, and
the representable range of a delay's ``until`` (:func:`until_instant`, also
used by the delay at run time).
Every problem names the node and, where it helps, the field.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime, timedelta, tzinfo

from flowledger.definitions.deadline_rules import deadline_problems
from flowledger.definitions.expressions import ExpressionError, compile_condition, compile_mapping
from flowledger.definitions.model import CompensationAction, HttpCall, Node, ProcessDefinition
from flowledger.definitions.problems import Problem
from flowledger.definitions.secret_names import is_secret
from flowledger.definitions.templates import (
    ACTION_VALUES,
    CALL_VALUES,
    dead_placeholder,
    placeholders,
    validate_template,
)

# the instants a delay may wake at: a day inside what ``datetime`` holds, so
# the instant can be stored (in UTC) and shown in any time zone (issue 31 item 6)
UNTIL_MIN = datetime(1, 1, 2, tzinfo=UTC)
UNTIL_MAX = datetime(9999, 12, 30, tzinfo=UTC)

HUMAN_TYPES = frozenset({"approval", "handle", "cc"})
TIMEOUT_TYPES = frozenset({"approval", "handle"})
FAILURE_POLICY_TYPES = frozenset({"trigger", "subprocess"})

# (attribute, document name, node types it belongs to)
_ONLY_FOR: tuple[tuple[str, str, frozenset[str]], ...] = (
    ("call", "call", frozenset({"trigger"})),
    ("dispatch", "dispatch", frozenset({"external_approval"})),
    ("dispatch_fallback", "dispatchFallback", frozenset({"external_approval"})),
    ("definition_key", "definitionKey", frozenset({"subprocess"})),
    ("definition_version", "definitionVersion", frozenset({"subprocess"})),
    ("input_mapping", "inputMapping", frozenset({"subprocess"})),
    ("output_mapping", "outputMapping", frozenset({"subprocess"})),
    ("duration", "duration", frozenset({"delay"})),
    ("until", "until", frozenset({"delay"})),
)


def node_problems(defn: ProcessDefinition, node: Node) -> list[Problem]:
    return list(_NodeChecker(defn, node).run())


class _NodeChecker:
    def __init__(self, defn: ProcessDefinition, node: Node) -> None:
        self.defn = defn
        self.node = node

    def problem(self, code: str, message: str, field: str | None = None) -> Problem:
        return Problem(code, f"node {self.node.key!r}: {message}", node=self.node.key, field=field)

    def run(self) -> Iterator[Problem]:
        yield from self.fields_in_place()
        yield from self.people()
        yield from deadline_problems(self.defn, self.node)
        yield from self.waits()
        yield from self.calls()
        yield from self.subprocess()
        yield from self.failure_policy()

    def fields_in_place(self) -> Iterator[Problem]:
        for attr, name, types in _ONLY_FOR:
            value = getattr(self.node, attr)
            if value not in (None, {}) and self.node.type not in types:
                allowed = ", ".join(sorted(types))
                yield self.problem(
                    "field_not_applicable",
                    f"{name} does not apply to a {self.node.type} node (only {allowed})",
                    name,
                )

    def people(self) -> Iterator[Problem]:
        node = self.node
        if node.type in HUMAN_TYPES and (node.assignees is None or node.assignees.empty):
            yield self.problem(
                "missing_assignees",
                f"a {node.type} node needs assignees (users, roles or expr)",
                "assignees",
            )
        if node.assignees and node.assignees.expr is not None:
            yield from self.expression(node.assignees.expr, "assignees.expr", "bad_expression")
        if node.timeout is not None:
            if node.type not in TIMEOUT_TYPES:
                yield self.problem(
                    "timeout_not_allowed",
                    f"a timeout policy applies to approval and handle nodes, not {node.type}",
                    "timeout",
                )
            elif node.timeout.after <= timedelta(0):
                yield self.problem(
                    "non_positive_duration", "timeout.after must be positive", "timeout.after"
                )

    def waits(self) -> Iterator[Problem]:
        node = self.node
        if node.type == "delay":
            if node.duration is None and node.until is None:
                yield self.problem("delay_missing_wait", "a delay needs duration or until")
            elif node.duration is not None and node.until is not None:
                yield self.problem(
                    "delay_ambiguous_wait", "a delay takes duration or until, not both"
                )
        if node.duration is not None and node.duration < timedelta(0):
            # PT0S is allowed: the delay's job wakes it at once (an async hand-off).
            yield self.problem("non_positive_duration", "duration must not be negative", "duration")
        if node.until is not None and not _valid_until(node.until):
            yield self.problem(
                "bad_until",
                f"until {node.until!r} is neither an ISO date-time, a template nor an "
                "expression such as form.dueDate",
                "until",
            )
        elif node.until is not None and _is_literal_instant(node.until):
            try:
                until_instant(node.until, UTC)
            except ValueError as exc:
                yield self.problem("until_out_of_range", str(exc), "until")

    def calls(self) -> Iterator[Problem]:
        node = self.node
        if node.type == "trigger" and node.call is None:
            yield self.problem("trigger_missing_call", "a trigger node needs a call", "call")
        if node.type == "external_approval" and node.dispatch is None:
            yield self.problem(
                "external_approval_missing_dispatch",
                "an external_approval node needs a dispatch",
                "dispatch",
            )
        for name, call in (("call", node.call), ("dispatch", node.dispatch)):
            if call is not None:
                yield from self.templates(name, _call_templates(call), CALL_VALUES)
                yield from self.secret_headers(name, call.headers)
                yield from self.result_mapping(name, call)
        if node.compensation is not None:
            yield from self.templates(
                "compensation", _action_templates(node.compensation), ACTION_VALUES
            )
            yield from self.secret_headers("compensation", node.compensation.headers)
        fallback = node.failure_policy.fallback_action if node.failure_policy else None
        if fallback is not None:
            yield from self.secret_headers("failurePolicy.fallbackAction", fallback.headers)

    def result_mapping(self, where: str, call: HttpCall) -> Iterator[Problem]:
        """What the sandbox refuses whatever the response (issue 17 item 5),
        checked as the run time compiles it (issue 31 item 6)."""
        for target, text in call.result_mapping.items():
            field = f"{where}.resultMapping.{target}"
            try:
                compile_mapping(text)
            except ExpressionError as exc:
                yield self.problem("bad_mapping", f"{field}: {exc.message}", field)

    def secret_headers(self, where: str, headers: dict[str, str]) -> Iterator[Problem]:
        """Credentials do not belong in a definition: everyone who may read
        definitions, jobs or traces would see them (X-3: use a connector)."""
        for header in headers:
            if is_secret(header):
                yield self.problem(
                    "secret_header_in_definition",
                    f"header {header!r} carries a credential; definitions are readable by "
                    "operators and monitors — put it in a connector (kind: connector) instead",
                    f"{where}.headers.{header}",
                )

    def subprocess(self) -> Iterator[Problem]:
        node = self.node
        if node.type == "subprocess":
            if not node.definition_key:
                yield self.problem(
                    "subprocess_missing_definition_key",
                    "a subprocess node needs definitionKey",
                    "definitionKey",
                )
            elif node.definition_key == self.defn.key:
                yield self.problem(
                    "subprocess_recursion",
                    f"a subprocess may not start its own definition {self.defn.key!r}",
                    "definitionKey",
                )
        for name, mapping in (
            ("inputMapping", node.input_mapping),
            ("outputMapping", node.output_mapping),
        ):
            for target, text in mapping.items():
                yield from self.expression(text, f"{name}.{target}", "bad_mapping")

    def failure_policy(self) -> Iterator[Problem]:
        node, policy = self.node, self.node.failure_policy
        if policy is None:
            return
        if node.type not in FAILURE_POLICY_TYPES:
            yield self.problem(
                "failure_policy_not_allowed",
                f"failurePolicy applies to trigger and subprocess nodes, not {node.type}",
                "failurePolicy",
            )
            return
        target = policy.fallback_node_key
        if policy.action == "fallback" and target is None and policy.fallback_action is None:
            yield self.problem(
                "fallback_missing_target",
                "a fallback policy needs fallbackNodeKey or fallbackAction",
                "failurePolicy",
            )
        if target is not None:
            if target == node.key:
                yield self.problem(
                    "fallback_to_self",
                    "failurePolicy.fallbackNodeKey names the failing node itself",
                    "failurePolicy.fallbackNodeKey",
                )
            elif not self.defn.has_node(target):
                yield self.problem(
                    "fallback_node_missing",
                    f"failurePolicy.fallbackNodeKey names unknown node {target!r}",
                    "failurePolicy.fallbackNodeKey",
                )
        if policy.action == "compensate" and node.compensation is None:
            yield self.problem(
                "compensate_without_compensation",
                "failurePolicy compensate needs a compensation action on the node",
                "failurePolicy.action",
            )
        if policy.fallback_action is not None:
            yield from self.templates(
                "failurePolicy.fallbackAction",
                _action_templates(policy.fallback_action),
                ACTION_VALUES,
            )

    def expression(self, text: str, field: str, code: str) -> Iterator[Problem]:
        try:
            compile_condition(text)
        except ExpressionError as exc:
            yield self.problem(code, f"{field}: {exc.message}", field)

    def templates(
        self, prefix: str, texts: Mapping[str, str | None], names: Sequence[str]
    ) -> Iterator[Problem]:
        """Each template well-formed, and each of its placeholders one that
        the values ``names`` can fill."""
        for name, text in texts.items():
            if text is None:
                continue
            try:
                validate_template(text)
            except ExpressionError as exc:
                yield self.problem(
                    "bad_template", f"{prefix}.{name}: {exc.message}", f"{prefix}.{name}"
                )
                continue
            for path in placeholders(text):
                why = dead_placeholder(path, names)
                if why is not None:
                    yield self.problem(
                        "bad_template", f"{prefix}.{name}: {why}", f"{prefix}.{name}"
                    )


def _call_templates(call: HttpCall) -> dict[str, str | None]:
    texts: dict[str, str | None] = {"url": call.url, "bodyTemplate": call.body_template}
    texts.update({f"headers.{k}": v for k, v in call.headers.items()})
    return texts


def _action_templates(action: CompensationAction) -> dict[str, str | None]:
    texts: dict[str, str | None] = {"url": action.url, "bodyTemplate": action.body_template}
    texts.update({f"headers.{k}": v for k, v in action.headers.items()})
    texts.update({f"fieldValues.{k}": v for k, v in action.field_values.items()})
    return texts


def until_instant(text: str, zone: tzinfo) -> datetime:
    """The instant an ISO 8601 ``until`` names (``zone`` when it names none);
    ValueError unless it is one and lies, in UTC, within
    [:data:`UNTIL_MIN`, :data:`UNTIL_MAX`] (``9999-12-31T23:00:00-05:00``
    is past what a date-time holds once in UTC). Used at deploy for a literal
    and by the delay node at run time for a form value."""
    due = datetime.fromisoformat(text)
    due = due if due.tzinfo else due.replace(tzinfo=zone)
    try:
        utc = due.astimezone(UTC)
    except OverflowError:
        utc = None
    if utc is None or not UNTIL_MIN <= utc <= UNTIL_MAX:
        raise ValueError(
            f"until {text!r} is outside the representable range once in UTC "
            f"({UNTIL_MIN.isoformat()} to {UNTIL_MAX.isoformat()})"
        )
    return due


def _is_literal_instant(text: str) -> bool:
    if "{{" in text:
        return False
    try:
        datetime.fromisoformat(text)
    except ValueError:
        return False
    return True


def _valid_until(text: str) -> bool:
    """An ISO 8601 date-time, a ``{{ }}`` template, or a value expression."""
    try:
        if "{{" in text:
            validate_template(text)
            return True
        try:
            datetime.fromisoformat(text)
            return True
        except ValueError:
            compile_condition(text)
            return True
    except ExpressionError:
        return False
