"""What an automation rule says (SPEC X-6): its pydantic models (camelCase
JSON, unknown keys refused), the checks a rule must pass before it is saved
(templates, condition, URL, headers), and how secret header values are kept
(encrypted at rest, never shown).

Actions, by ``type``:

- ``http`` — ``url`` (a template; placeholder values are percent-encoded and
  may appear only in the path, query or fragment: the scheme, host and port
  are fixed when the rule is saved, so form data cannot send the rule's
  secret headers elsewhere — X-4; checked again when the action runs),
  ``httpMethod``, ``headers`` (template values), ``secretHeaders`` (fixed
  values stored encrypted with the runtime's
  :class:`~flowledger.outbound.secrets.SecretBox` and shown as
  ``********``), ``bodyTemplate``, ``idempotent`` (a write declared
  idempotent is retried after an unknown outcome instead of going to the
  L-17 dead letter);
- ``updateData`` — ``fieldValues`` ``{field: template}``; a template that is a
  single placeholder writes the value itself (``{{formData.amount}}`` stays a
  number), any other writes its text;
- ``notify`` — ``channel`` ``inApp`` (recipients are user ids), ``email``
  (addresses) or ``sms`` (numbers, ``templateId`` required, optional
  ``fieldValues`` for the SMS template; the rendered body and title are sent
  as the ``body`` / ``title`` fields), ``recipients`` (templates),
  ``title``, ``bodyTemplate``.

A rule's optional ``condition`` is an expression of the definitions'
language (:mod:`flowledger.definitions.expressions`) over ``form`` (the
instance's form data when the event is relayed) and ``system`` (the
``system.*`` values of the templates plus ``system.event``, the event's
payload), e.g. ``form.amount > 1000 and system.event.status == "approved"``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, TypeAdapter
from pydantic.alias_generators import to_camel

from flowledger.definitions.expressions import ExpressionError, compile_condition
from flowledger.events.automation_templates import AutomationRuleInvalid, check_template
from flowledger.outbound.secrets import SecretBox, need_box
from flowledger.outbound.ssrf import OutboundRefused, build_url

REDACTED = "********"
MAX_ACTIONS = 20
WILDCARD = "*"
_HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$")
_FIELD_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]{0,127}$")
_RESERVED_HEADERS = frozenset({"host", "content-length", "transfer-encoding", "connection"})


def _no_nul(value: str) -> str:
    if "\x00" in value:
        raise ValueError("must not contain NUL characters")
    return value


Text = Annotated[str, AfterValidator(_no_nul)]
ShortText = Annotated[str, Field(max_length=2048), AfterValidator(_no_nul)]
Template = Annotated[str, Field(max_length=100_000), AfterValidator(_no_nul)]
EventType = Annotated[str, Field(pattern=r"^(\*|[A-Za-z][A-Za-z0-9_.-]{0,63})$")]
DefinitionKey = Annotated[str, Field(min_length=1, max_length=64), AfterValidator(_no_nul)]
Name = Annotated[str, Field(min_length=1, max_length=255), AfterValidator(_no_nul)]
TemplateId = Annotated[str, Field(min_length=1, max_length=128), AfterValidator(_no_nul)]
Condition = Annotated[str, Field(min_length=1, max_length=2000), AfterValidator(_no_nul)]


class _Model(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")


class HttpAction(_Model):
    type: Literal["http"]
    url: Annotated[str, Field(min_length=1, max_length=2048), AfterValidator(_no_nul)]
    http_method: Literal["GET", "POST", "PUT", "PATCH", "DELETE"] = "POST"
    headers: Annotated[dict[ShortText, ShortText], Field(max_length=50)] = Field(
        default_factory=dict
    )
    secret_headers: Annotated[dict[ShortText, ShortText], Field(max_length=20)] = Field(
        default_factory=dict
    )
    body_template: Template | None = None
    idempotent: bool = False


class UpdateDataAction(_Model):
    type: Literal["updateData"]
    field_values: Annotated[dict[ShortText, ShortText], Field(min_length=1, max_length=100)]


class NotifyAction(_Model):
    type: Literal["notify"]
    channel: Literal["inApp", "email", "sms"]
    recipients: Annotated[list[ShortText], Field(min_length=1, max_length=100)]
    title: Annotated[str, Field(max_length=255), AfterValidator(_no_nul)] | None = None
    body_template: Template | None = None
    template_id: TemplateId | None = None
    field_values: Annotated[dict[ShortText, ShortText], Field(max_length=100)] = Field(
        default_factory=dict
    )


Action = Annotated[HttpAction | UpdateDataAction | NotifyAction, Field(discriminator="type")]
ACTIONS: TypeAdapter[list[Action]] = TypeAdapter(list[Action])
ONE_ACTION: TypeAdapter[Action] = TypeAdapter(Action)

EventTypes = Annotated[list[EventType], Field(min_length=1, max_length=50)]
Actions = Annotated[list[Action], Field(min_length=1, max_length=MAX_ACTIONS)]


class RuleSpec(_Model):
    """The content of a rule as a client writes it."""

    name: Name
    event_types: EventTypes
    definition_key: DefinitionKey | None = None
    condition: Condition | None = None
    actions: Actions
    enabled: bool = True


class RulePatch(_Model):
    """A partial change; a key left out keeps its value, ``null`` clears an
    optional one (``definitionKey``, ``condition``)."""

    name: Name | None = None
    event_types: EventTypes | None = None
    definition_key: DefinitionKey | None = None
    condition: Condition | None = None
    actions: Actions | None = None
    enabled: bool | None = None


# ------------------------------------------------------------------- checks


def check_condition(condition: str | None) -> None:
    if condition is None:
        return
    try:
        compile_condition(condition)
    except ExpressionError as exc:
        raise AutomationRuleInvalid(f"condition: {exc.message}", field="condition") from None


def _check_headers(headers: Mapping[str, str], at: str, *, templates: bool) -> None:
    for name, value in headers.items():
        field = f"{at}.{name}"
        if not _HEADER_NAME.match(name) or name.lower() in _RESERVED_HEADERS:
            raise AutomationRuleInvalid(f"{field}: not a header name a rule may set", field=field)
        if "\r" in value or "\n" in value:
            raise AutomationRuleInvalid(f"{field}: line breaks are not allowed", field=field)
        if templates:
            check_template(value, field)


def _check_origin(url: str, field: str) -> None:
    """Refuse a URL template whose scheme, host or port holds a placeholder
    (or that is no valid http(s) URL once its placeholders are empty)."""
    try:
        build_url(url, {})
    except OutboundRefused as exc:
        raise AutomationRuleInvalid(f"{field}: {exc.reason}", field=field) from None


def _check_http(action: HttpAction, at: str) -> None:
    if not action.url.lower().startswith(("http://", "https://")):
        raise AutomationRuleInvalid(
            f"{at}.url: must start with http:// or https://", field=f"{at}.url"
        )
    check_template(action.url, f"{at}.url")
    _check_origin(action.url, f"{at}.url")
    _check_headers(action.headers, f"{at}.headers", templates=True)
    _check_headers(action.secret_headers, f"{at}.secretHeaders", templates=False)
    both = {n.lower() for n in action.headers} & {n.lower() for n in action.secret_headers}
    if both:
        field = f"{at}.secretHeaders.{sorted(both)[0]}"
        raise AutomationRuleInvalid(f"{field}: also given in headers", field=field)
    if action.body_template is not None:
        if action.http_method == "GET":
            field = f"{at}.bodyTemplate"
            raise AutomationRuleInvalid(f"{field}: a GET request has no body", field=field)
        check_template(action.body_template, f"{at}.bodyTemplate")


def _check_update(action: UpdateDataAction, at: str) -> None:
    for name, template in action.field_values.items():
        field = f"{at}.fieldValues.{name}"
        if not _FIELD_NAME.match(name):
            raise AutomationRuleInvalid(f"{field}: not a form field name", field=field)
        check_template(template, field)


def _check_notify(action: NotifyAction, at: str) -> None:
    for i, recipient in enumerate(action.recipients):
        check_template(recipient, f"{at}.recipients[{i}]")
    if action.title is not None:
        check_template(action.title, f"{at}.title")
    if action.body_template is not None:
        check_template(action.body_template, f"{at}.bodyTemplate")
    elif action.channel != "sms":
        field = f"{at}.bodyTemplate"
        raise AutomationRuleInvalid(f"{field}: required for {action.channel}", field=field)
    if action.channel == "sms":
        if action.template_id is None:
            field = f"{at}.templateId"
            raise AutomationRuleInvalid(f"{field}: required for sms", field=field)
        for name, template in action.field_values.items():
            check_template(template, f"{at}.fieldValues.{name}")
    else:
        for key in ("template_id", "field_values"):
            if getattr(action, key):
                field = f"{at}.{to_camel(key)}"
                raise AutomationRuleInvalid(f"{field}: only for sms", field=field)


def check_actions(actions: Sequence[HttpAction | UpdateDataAction | NotifyAction]) -> None:
    """Refuse the first problem of ``actions``, naming its field."""
    for index, action in enumerate(actions):
        at = f"actions[{index}]"
        if isinstance(action, HttpAction):
            _check_http(action, at)
        elif isinstance(action, UpdateDataAction):
            _check_update(action, at)
        else:
            _check_notify(action, at)


# ------------------------------------------------------------------ secrets


def stored_actions(
    actions: Sequence[HttpAction | UpdateDataAction | NotifyAction],
    previous: Sequence[Mapping[str, Any]] = (),
    box: SecretBox | None = None,
) -> list[dict[str, Any]]:
    """The JSON to store: secret header values encrypted. A value sent back
    as ``********`` keeps the stored secret of the same header of the same
    action (so a rule read and written back keeps its secrets)."""
    out: list[dict[str, Any]] = []
    for index, action in enumerate(actions):
        data = action.model_dump(mode="json", by_alias=True)
        if isinstance(action, HttpAction) and action.secret_headers:
            old = previous[index].get("secretHeaders", {}) if index < len(previous) else {}
            data["secretHeaders"] = {
                name: _stored_secret(name, value, old, index, box)
                for name, value in action.secret_headers.items()
            }
        out.append(data)
    return out


def _stored_secret(
    name: str, value: str, old: Mapping[str, str], index: int, box: SecretBox | None
) -> str:
    if value != REDACTED:
        return need_box(box).encrypt(value)
    if name in old:
        return old[name]
    field = f"actions[{index}].secretHeaders.{name}"
    raise AutomationRuleInvalid(f"{field}: no stored secret to keep; send the value", field=field)


def public_actions(stored: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Stored actions as shown to clients: secret values replaced by ``********``."""
    out = []
    for action in stored:
        data = dict(action)
        if data.get("secretHeaders"):
            data["secretHeaders"] = dict.fromkeys(data["secretHeaders"], REDACTED)
        out.append(data)
    return out


def reveal_secret(ciphertext: str, box: SecretBox) -> str:
    return box.decrypt(ciphertext)


def matches_type(event_types: Sequence[str], event_type: str) -> bool:
    return WILDCARD in event_types or event_type in event_types
