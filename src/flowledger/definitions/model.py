"""The typed shape of a process definition (DESIGN "Definition format",
SPEC E-1, E-3, C-1, C-4, X-1..X-3).

Owns the pydantic models and the rules local to one object (a connector call
needs a relative url, a transfer timeout needs a target, each compensation
action type needs its fields). Rules that look across nodes and edges live in
``validate`` and ``graph``.

Python attribute names are snake_case (``http_method``, ``failure_policy``);
documents use the camelCase aliases (``httpMethod``, ``failurePolicy``) and
``from`` for :attr:`Edge.from_`. Both spellings are accepted on input; dump
with ``by_alias=True`` (see :meth:`ProcessDefinition.to_document`) to get a
document back.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated, Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator, model_validator
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticCustomError

NodeType = Literal[
    "start",
    "end",
    "approval",
    "handle",
    "cc",
    "exclusive",
    "parallel",
    "inclusive",
    "delay",
    "trigger",
    "external_approval",
    "subprocess",
    "catch",
]
GATEWAY_TYPES: frozenset[str] = frozenset({"exclusive", "parallel", "inclusive"})
CONDITIONAL_GATEWAYS: frozenset[str] = frozenset({"exclusive", "inclusive"})
HTTP_METHODS: frozenset[str] = frozenset({"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"})

DEFINITION_KEY_PATTERN = r"^[A-Za-z][A-Za-z0-9_.-]{0,63}$"


UserId = Annotated[str, Field(min_length=1, max_length=128)]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, alias_generator=to_camel)


def _method(value: str) -> str:
    method = value.upper()
    if method not in HTTP_METHODS:
        raise PydanticCustomError(
            "http_method_invalid",
            "httpMethod {method} is not one of {allowed}",
            {"method": value, "allowed": ", ".join(sorted(HTTP_METHODS))},
        )
    return method


# ------------------------------------------------------------------- form


class FormField(_Model):
    key: str = Field(min_length=1)
    type: Literal["string", "number", "integer", "boolean", "date", "object", "array"]
    required: bool = False
    enum: list[Any] | None = None
    label: str | None = None


class FormSchema(_Model):
    fields: list[FormField] = Field(default_factory=list)


# ------------------------------------------------------------------- people


class Assignees(_Model):
    users: list[UserId] = Field(default_factory=list)
    roles: list[str] = Field(default_factory=list)
    expr: str | None = None

    @property
    def empty(self) -> bool:
        return not (self.users or self.roles or self.expr)


class TimeoutPolicy(_Model):
    after: timedelta
    action: Literal["auto_approve", "auto_reject", "notify", "transfer"]
    transfer_to: str | None = None

    @model_validator(mode="after")
    def _transfer_needs_target(self) -> Self:
        if self.action == "transfer" and not self.transfer_to:
            raise PydanticCustomError(
                "timeout_transfer_target_missing", "a transfer timeout needs transferTo"
            )
        return self


#: the kinds of an escalation step (issue 31 item 4)
ESCALATION_ACTIONS: frozenset[str] = frozenset({"remind", "transfer", "notify_admin"})


class EscalationStep(_Model):
    """One step of a deadline's escalation chain: ``after`` the due time,
    ``action`` (``remind``, ``transfer``, ``notify_admin``); a transfer names
    ``to``: ``manager`` (the assignee's manager), ``user:<id>`` or
    ``role:<name>``. The kind and target are checked in ``rules`` (a problem
    naming the field, not a parse error)."""

    after: timedelta
    action: str
    to: str | None = None


class Deadline(_Model):
    """A human node's due time (``due``: a duration from the task's
    creation, or ``dueField``: a form field holding an ISO date-time) and
    its escalation chain, run by ``task_timeout`` jobs (issue 31 item 4)."""

    due: timedelta | None = None
    due_field: str | None = None
    escalation: list[EscalationStep] = Field(default_factory=list)


# ------------------------------------------------------------------- outbound


class HttpCall(_Model):
    kind: Literal["http", "connector"]
    url: str = Field(min_length=1)
    http_method: str = "POST"
    headers: dict[str, str] = Field(default_factory=dict)
    body_template: str | None = None
    idempotent: bool = False
    connector_id: str | None = None
    result_mapping: dict[str, str] = Field(default_factory=dict)
    mode: Literal["sync", "async"] = "sync"

    @field_validator("http_method")
    @classmethod
    def normalize_method(cls, value: str) -> str:
        return _method(value)

    @model_validator(mode="after")
    def _connector_rules(self) -> Self:
        if self.kind == "connector":
            if not self.connector_id:
                raise PydanticCustomError(
                    "connector_id_missing", "a connector call needs connectorId"
                )
            if not self.url.startswith("/"):
                raise PydanticCustomError(
                    "connector_url_not_relative",
                    "a connector call's url must be a relative path starting with '/' (X-3)",
                )
        return self


CompensationType = Literal["http", "connector", "sms", "email", "updateData"]


class CompensationAction(_Model):
    """A reverse (``compensation``) or alternate (``fallbackAction``) action, C-4."""

    type: CompensationType
    url: str | None = None
    http_method: str = "POST"
    headers: dict[str, str] = Field(default_factory=dict)
    body_template: str | None = None
    connector_id: str | None = None
    template_id: str | None = None
    recipients: list[str] = Field(default_factory=list)
    field_values: dict[str, str | None] = Field(default_factory=dict)
    field_keys: list[str] = Field(default_factory=list)
    max_retries: int | None = Field(default=None, ge=0)

    @field_validator("http_method")
    @classmethod
    def normalize_method(cls, value: str) -> str:
        return _method(value)

    @model_validator(mode="after")
    def _per_type(self) -> Self:
        missing: list[str] = []
        if self.type == "http" and not self.url:
            missing.append("url")
        elif self.type == "connector":
            if not self.connector_id:
                missing.append("connectorId")
            if not self.url:
                missing.append("url")
            elif not self.url.startswith("/"):
                raise PydanticCustomError(
                    "connector_url_not_relative",
                    "a connector action's url must be a relative path starting with '/' (X-3)",
                )
        elif self.type == "sms":
            if not self.template_id:
                missing.append("templateId")
            if not self.recipients:
                missing.append("recipients")
        elif self.type == "email" and not self.recipients:
            missing.append("recipients")
        elif self.type == "updateData" and not self.field_keys:
            missing.append("fieldKeys")
        if missing:
            raise PydanticCustomError(
                "compensation_incomplete",
                "a {type} action needs {fields}",
                {"type": self.type, "fields": " and ".join(missing)},
            )
        return self


class FailurePolicy(_Model):
    action: Literal["continue", "retry", "compensate", "fallback", "notify", "terminate"]
    saga_rollback: bool = False
    fallback_node_key: str | None = None
    fallback_action: CompensationAction | None = None


# ------------------------------------------------------------------- graph


class Node(_Model):
    key: str = Field(min_length=1, max_length=128)
    type: NodeType
    name: str | None = None
    assignees: Assignees | None = None
    mode: Literal["any", "all"] = "any"
    timeout: TimeoutPolicy | None = None
    deadline: Deadline | None = None
    duration: timedelta | None = None
    until: str | None = None
    call: HttpCall | None = None
    on_failure: Literal["continue", "retry"] | None = None
    max_retries: int | None = Field(default=None, ge=0)
    compensation: CompensationAction | None = None
    failure_policy: FailurePolicy | None = None
    definition_key: str | None = None
    definition_version: int | None = Field(default=None, ge=1)
    input_mapping: dict[str, str] = Field(default_factory=dict)
    output_mapping: dict[str, str] = Field(default_factory=dict)
    dispatch: HttpCall | None = None
    dispatch_fallback: Literal["fail", "auto_approve", "auto_reject", "manual"] | None = None


class Edge(_Model):
    from_: str = Field(alias="from", min_length=1)
    to: str = Field(min_length=1)
    condition: str | None = None
    default: bool = False
    on: Literal["error"] | None = None

    @property
    def ref(self) -> str:
        """How problems and traces name the edge: ``"from->to"``."""
        return f"{self.from_}->{self.to}"

    @property
    def is_error(self) -> bool:
        return self.on == "error"


class ProcessDefinition(_Model):
    key: str = Field(pattern=DEFINITION_KEY_PATTERN)
    name: str = Field(min_length=1, max_length=255)
    description: str | None = None
    form: FormSchema = Field(default_factory=FormSchema)
    nodes: list[Node]
    edges: list[Edge]

    # Indexes built once at construction. Treat a definition as immutable
    # (SPEC E-2): mutate a copy and re-validate instead.
    _nodes: dict[str, Node] = PrivateAttr(default_factory=dict)
    _out: dict[str, list[Edge]] = PrivateAttr(default_factory=dict)
    _in: dict[str, list[Edge]] = PrivateAttr(default_factory=dict)
    _err: dict[str, Edge] = PrivateAttr(default_factory=dict)

    def model_post_init(self, context: Any, /) -> None:
        for node in self.nodes:
            self._nodes.setdefault(node.key, node)
        for edge in self.edges:
            if edge.is_error:
                self._err.setdefault(edge.from_, edge)
            else:
                self._out.setdefault(edge.from_, []).append(edge)
                self._in.setdefault(edge.to, []).append(edge)

    def node(self, key: str) -> Node:
        """The node with ``key`` (the first one, if keys repeat); KeyError if none."""
        try:
            return self._nodes[key]
        except KeyError:
            raise KeyError(f"definition {self.key!r} has no node {key!r}") from None

    def has_node(self, key: str) -> bool:
        return key in self._nodes

    def outgoing(self, key: str) -> list[Edge]:
        """Normal (non-error) edges leaving ``key``, in document order."""
        return list(self._out.get(key, ()))

    def incoming(self, key: str) -> list[Edge]:
        """Normal (non-error) edges entering ``key``, in document order."""
        return list(self._in.get(key, ()))

    def error_edge(self, key: str) -> Edge | None:
        """The exception edge (``on: error``) leaving ``key``, if any."""
        return self._err.get(key)

    def start_node(self) -> Node:
        """The start node; KeyError if the definition has none."""
        for node in self.nodes:
            if node.type == "start":
                return node
        raise KeyError(f"definition {self.key!r} has no start node")

    def to_document(self) -> dict[str, Any]:
        """The definition as a JSON-ready document with camelCase keys (the snapshot form)."""
        return self.model_dump(mode="json", by_alias=True)
