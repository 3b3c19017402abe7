"""From text to a typed :class:`ProcessDefinition` (SPEC E-1).

Owns reading JSON or YAML and turning every pydantic error into a
:class:`Problem` whose location names the node or edge
(``nodes[3] (key 'erp').call.url: field required``). All structural errors of
a document are reported together. Cross-node rules are not checked here
(see ``validate``).

YAML is read with YAML 1.2 scalars: only ``true`` / ``false`` are booleans (so
``on: error`` stays the key ``on``) and timestamps stay strings.

Hostile documents (issue 17 item 4): a YAML document may use at most
``max_yaml_aliases`` aliases (``*ref``; a "billion laughs" document is refused
as ``yaml_aliases_exceeded`` before it expands), and a mapping — YAML or JSON
— may not repeat a key (``duplicate_key``; the last one silently won before).
Every value of the document is one JSON can hold (issue 31 item 6,
:mod:`.document_values`: no lone surrogate, NUL, non-finite or out-of-range
number, non-UTF-8 ``!!binary``, set, date or non-text key). The expanded
document may be at most ``max_definition_bytes`` once serialised
(``definition_too_large``). Both caps are the caller's :class:`DocumentLimits`
(the engine's, from its settings; the settings' defaults when none are given).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import yaml
from pydantic import ValidationError
from pydantic_core import ErrorDetails

from flowledger.definitions.document_values import checked_document
from flowledger.definitions.model import ProcessDefinition
from flowledger.definitions.problems import DefinitionError, Problem
from flowledger.settings import Settings

Format = Literal["json", "yaml", "auto"]

_DEFAULTS = Settings.model_fields


@dataclass(frozen=True)
class DocumentLimits:
    """The caps a definition document is read with (issue 17 item 4):
    ``max_yaml_aliases`` and ``max_definition_bytes`` of the settings (their
    defaults unless :meth:`of` some settings)."""

    max_yaml_aliases: int = _DEFAULTS["max_yaml_aliases"].default
    max_definition_bytes: int = _DEFAULTS["max_definition_bytes"].default

    @classmethod
    def of(cls, settings: Settings) -> DocumentLimits:
        return cls(settings.max_yaml_aliases, settings.max_definition_bytes)


_CODES = {
    "missing": "missing_field",
    "extra_forbidden": "unknown_field",
}
# codes raised by the model's own validators (PydanticCustomError types)
_CUSTOM_CODES = frozenset(
    {
        "connector_id_missing",
        "connector_url_not_relative",
        "timeout_transfer_target_missing",
        "compensation_incomplete",
        "http_method_invalid",
    }
)


class _Loader(yaml.SafeLoader):  # type: ignore[misc,unused-ignore]
    """SafeLoader with YAML 1.2 booleans and no timestamp conversion, a bound
    on aliases and no duplicate keys."""

    def __init__(self, stream: str, max_aliases: int) -> None:
        super().__init__(stream)
        self.max_aliases = max_aliases
        self.aliases_left = max_aliases

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            self.aliases_left -= 1
            if self.aliases_left < 0:
                event = self.peek_event()
                raise _Refused(
                    "yaml_aliases_exceeded",
                    f"more than {self.max_aliases} aliases (line {event.start_mark.line + 1})",
                )
        return super().compose_node(parent, index)

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        if isinstance(node, yaml.MappingNode):
            seen: set[Any] = set()
            for key_node, _value in node.value:
                if not isinstance(key_node, yaml.ScalarNode):
                    continue  # the constructor refuses an unhashable key itself
                key = self.construct_object(key_node, deep=deep)
                if isinstance(key, str | int | float | bool) and key in seen:
                    raise _Refused(
                        "duplicate_key",
                        f"duplicate key {key!r} (line {key_node.start_mark.line + 1})",
                    )
                seen.add(key)
        return super().construct_mapping(node, deep=deep)


class _Refused(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code, self.message = code, message


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _Refused("duplicate_key", f"duplicate key {key!r}")
        out[key] = value
    return out


_Loader.yaml_implicit_resolvers = {
    first: [
        (tag, regexp)
        for tag, regexp in resolvers
        if tag not in ("tag:yaml.org,2002:bool", "tag:yaml.org,2002:timestamp")
    ]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:bool",
    re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"),
    list("tTfF"),
)


def _syntax(message: str) -> DefinitionError:
    return DefinitionError([Problem("syntax_error", message)])


def _load_json(text: str) -> Any:
    try:
        return json.loads(text, object_pairs_hook=_no_duplicates)
    except json.JSONDecodeError as exc:
        raise _syntax(f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from exc
    except _Refused as exc:
        raise DefinitionError([Problem(exc.code, exc.message)]) from None
    except RecursionError:
        raise _syntax("the document nests too deeply") from None


def _load_yaml(text: str, limits: DocumentLimits) -> Any:
    loader = None
    try:  # what yaml.load does, with the alias cap given to the loader
        loader = _Loader(text, limits.max_yaml_aliases)
        return loader.get_single_data()
    except yaml.YAMLError as exc:
        raise _syntax(f"invalid YAML: {exc}") from exc
    except _Refused as exc:
        raise DefinitionError([Problem(exc.code, exc.message)]) from None
    except RecursionError:
        raise _syntax("the document nests too deeply") from None
    finally:
        if loader is not None:
            loader.dispose()


def _check_size(data: Any, cap: int) -> None:
    try:
        size = len(json.dumps(data, default=str))
    except (RecursionError, ValueError):
        raise _syntax("the document nests too deeply or refers to itself") from None
    if size > cap:
        raise DefinitionError(
            [Problem("definition_too_large", f"the definition is {size} bytes, over {cap}")]
        )


def read_document(
    source: str | bytes | Mapping[str, Any],
    fmt: Format = "auto",
    *,
    limits: DocumentLimits | None = None,
) -> dict[str, Any]:
    """The raw document (a dict) behind ``source``, read within ``limits``;
    DefinitionError if unreadable."""
    limits = limits or DocumentLimits()
    if isinstance(source, Mapping):
        data: Any = checked_document(source)
        _check_size(data, limits.max_definition_bytes)
        return dict(data)
    if isinstance(source, bytes):
        try:
            source = source.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise _syntax(f"definition is not UTF-8 text: {exc}") from exc
    if fmt == "json":
        data = _load_json(source)
    elif fmt == "yaml":
        data = _load_yaml(source, limits)
    elif source.lstrip().startswith(("{", "[")):
        try:
            data = _load_json(source)
        except DefinitionError as json_error:
            if json_error.problems[0].code != "syntax_error":
                raise
            try:  # a YAML flow mapping also starts with "{"
                data = _load_yaml(source, limits)
            except DefinitionError as yaml_error:
                if yaml_error.problems[0].code != "syntax_error":
                    raise
                raise json_error from None  # report the JSON error
    else:
        data = _load_yaml(source, limits)
    data = checked_document(data)
    _check_size(data, limits.max_definition_bytes)
    if not isinstance(data, dict):
        kind = "nothing" if data is None else type(data).__name__
        raise DefinitionError(
            [Problem("not_a_mapping", f"a definition must be a mapping, got {kind}")]
        )
    return data


def _item(data: Mapping[str, Any], section: str, index: int) -> Mapping[str, Any]:
    items = data.get(section)
    item: Any = items[index] if isinstance(items, list) and 0 <= index < len(items) else None
    return item if isinstance(item, Mapping) else {}


def _path(parts: tuple[int | str, ...]) -> str:
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _problem(error: ErrorDetails, data: Mapping[str, Any]) -> Problem:
    loc = tuple(error["loc"])
    kind = error["type"]
    code = _CODES.get(kind) or (kind if kind in _CUSTOM_CODES else "invalid_value")
    message = error["msg"]
    if kind == "extra_forbidden":
        message = "unknown field"
    elif message:
        message = message[0].lower() + message[1:]
    node = edge = None
    label = ""
    rest = loc
    if len(loc) >= 2 and loc[0] in ("nodes", "edges") and isinstance(loc[1], int):
        raw = _item(data, str(loc[0]), loc[1])
        rest = loc[2:]
        label = f"{loc[0]}[{loc[1]}]"
        if loc[0] == "nodes" and isinstance(raw.get("key"), str):
            node = raw["key"]
            label += f" (key {node!r})"
        elif (
            loc[0] == "edges"
            and isinstance(raw.get("from"), str)
            and isinstance(raw.get("to"), str)
        ):
            edge = f"{raw['from']}->{raw['to']}"
            label += f" ({edge})"
        if loc[0] == "nodes" and rest == ("type",) and kind == "literal_error":
            code = "unknown_node_type"
            message = f"unknown node type {error.get('input')!r}; {message}"
    field = _path(rest) or None
    where = label + ("." if label and field else "") + (field or "")
    return Problem(code, f"{where}: {message}" if where else message, node, edge, field)


def parse_definition(
    source: str | bytes | Mapping[str, Any],
    *,
    fmt: Format = "auto",
    limits: DocumentLimits | None = None,
) -> ProcessDefinition:
    """Read (within ``limits``) and type-check ``source`` (JSON text, YAML
    text or an already parsed mapping). Raises :class:`DefinitionError`
    listing every structural problem. Does not run the cross-node checks of
    ``validate_definition``."""
    data = read_document(source, fmt, limits=limits)
    try:
        return ProcessDefinition.model_validate(data)
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
        raise DefinitionError([_problem(error, data) for error in errors]) from None
