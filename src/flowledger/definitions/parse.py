"""From text to a typed :class:`ProcessDefinition` (SPEC E-1).

Owns reading JSON or YAML and turning every pydantic error into a
:class:`Problem` whose location names the node or edge
(``nodes[3] (key 'erp').call.url: field required``). All structural errors of
a document are reported together. Cross-node rules are not checked here
(see ``validate``).

YAML is read with YAML 1.2 scalars: only ``true`` / ``false`` are booleans (so
``on: error`` stays the key ``on``) and timestamps stay strings.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, Literal

import yaml
from pydantic import ValidationError
from pydantic_core import ErrorDetails

from flowledger.definitions.model import ProcessDefinition
from flowledger.definitions.problems import DefinitionError, Problem

Format = Literal["json", "yaml", "auto"]

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
    """SafeLoader with YAML 1.2 booleans and no timestamp conversion."""


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
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise _syntax(f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from exc


def _load_yaml(text: str) -> Any:
    try:
        return yaml.load(text, Loader=_Loader)
    except yaml.YAMLError as exc:
        raise _syntax(f"invalid YAML: {exc}") from exc


def read_document(source: str | bytes | Mapping[str, Any], fmt: Format = "auto") -> dict[str, Any]:
    """The raw document (a dict) behind ``source``; DefinitionError if unreadable."""
    if isinstance(source, Mapping):
        return dict(source)
    if isinstance(source, bytes):
        try:
            source = source.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise _syntax(f"definition is not UTF-8 text: {exc}") from exc
    if fmt == "json":
        data = _load_json(source)
    elif fmt == "yaml":
        data = _load_yaml(source)
    elif source.lstrip().startswith(("{", "[")):
        try:
            data = json.loads(source)
        except json.JSONDecodeError:
            try:  # a YAML flow mapping also starts with "{"
                data = yaml.load(source, Loader=_Loader)
            except yaml.YAMLError:
                data = _load_json(source)  # report the JSON error
    else:
        data = _load_yaml(source)
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
    source: str | bytes | Mapping[str, Any], *, fmt: Format = "auto"
) -> ProcessDefinition:
    """Read and type-check ``source`` (JSON text, YAML text or an already parsed
    mapping). Raises :class:`DefinitionError` listing every structural problem.
    Does not run the cross-node checks of ``validate_definition``."""
    data = read_document(source, fmt)
    try:
        return ProcessDefinition.model_validate(data)
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
        raise DefinitionError([_problem(error, data) for error in errors]) from None
