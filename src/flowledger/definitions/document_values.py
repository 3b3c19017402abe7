"""The values a definition document may hold (issue 31 item 6, SPEC E-1).

Owns one walk over a parsed definition document (YAML text, JSON text or a
mapping handed over as is) that refuses what JSON and the databases cannot
store faithfully, before anything is typed or written. A definition is a JSON
document; YAML is only another spelling of it. Problem codes, each naming the
path of the value (``nodes[1] (key 'erp').call.url``; ``node`` and ``field``
as the parser's problems name them):

* ``unpaired_surrogate`` — a lone UTF-16 surrogate in a text or key
  (YAML ``"\\ud800"``, JSON ``"\\udc00"``); a YAML pair of escapes
  (``"\\ud83d\\ude00"``) is joined into its one character;
* ``nul_character`` — U+0000 in a text or key (PostgreSQL text cannot hold it);
* ``non_finite_number`` — ``.nan``, ``.inf``, ``-.inf`` (YAML) or ``NaN``,
  ``Infinity``, ``1e999`` (JSON text);
* ``number_out_of_range`` — an integer outside signed 64 bits (as at the API
  edge, ``api/input_guards.py``);
* ``binary_not_utf8`` — ``!!binary`` bytes that are not UTF-8 text (bytes
  that are become the text they spell);
* ``unsupported_value`` — any other value JSON has no word for: a set
  (``!!set``), a date (``!!timestamp``), a mapping key that is not text
  (``1: x``, ``null: x``).

At most :data:`MAX_PROBLEMS` problems are listed. Shared sub-documents (YAML
anchors) are walked once.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from flowledger.definitions.problems import DefinitionError, Problem

INT64_MAX = 2**63 - 1
MAX_PROBLEMS = 20
_SURROGATE = re.compile("[\ud800-\udfff]")

PathPart = int | str


def checked_document(data: Any) -> Any:
    """``data`` with ``!!binary`` text decoded and YAML surrogate pairs
    joined; :class:`DefinitionError` listing every refused value (up to
    :data:`MAX_PROBLEMS`)."""
    walk = _Walk(data)
    try:
        result = walk.value(data, ())
    except RecursionError:
        raise DefinitionError([Problem("syntax_error", "the document nests too deeply")]) from None
    except _Full:
        result = None
    if walk.problems:
        raise DefinitionError(walk.problems)
    return result


class _Full(Exception):
    """Enough problems listed."""


class _Walk:
    def __init__(self, root: Any) -> None:
        self.root = root
        self.problems: list[Problem] = []
        self.done: dict[int, Any] = {}

    def refuse(self, code: str, path: tuple[PathPart, ...], what: str) -> None:
        self.problems.append(_problem(code, self.root, path, what))
        if len(self.problems) >= MAX_PROBLEMS:
            raise _Full

    def value(self, value: Any, path: tuple[PathPart, ...]) -> Any:
        if value is None or isinstance(value, bool):
            return value
        if isinstance(value, int):
            if not -INT64_MAX - 1 <= value <= INT64_MAX:
                self.refuse("number_out_of_range", path, "an integer outside signed 64 bits")
            return value
        if isinstance(value, float):
            if value != value or value in (float("inf"), float("-inf")):
                self.refuse("non_finite_number", path, f"{value!r} is not a finite number")
            return value
        if isinstance(value, str):
            return self.text(value, path, "the text")
        if isinstance(value, bytes):
            try:
                text = value.decode("utf-8")
            except UnicodeDecodeError as exc:
                self.refuse(
                    "binary_not_utf8",
                    path,
                    f"binary data that is not UTF-8 text (byte {exc.start})",
                )
                return value
            return self.text(text, path, "the text")
        if isinstance(value, Mapping | list | tuple):
            return self.container(value, path)
        kind = "a set" if isinstance(value, set | frozenset) else type(value).__name__
        self.refuse("unsupported_value", path, f"{kind} is not a JSON value")
        return value

    def container(
        self, value: Mapping[Any, Any] | list[Any] | tuple[Any, ...], path: tuple[PathPart, ...]
    ) -> Any:
        seen = self.done.get(id(value))
        if seen is not None:  # an anchor's second use (or a loop, left to the size check)
            return seen
        if isinstance(value, Mapping):
            out: dict[Any, Any] = {}
            self.done[id(value)] = out
            for key, item in value.items():
                if not isinstance(key, str):
                    self.refuse(
                        "unsupported_value",
                        (*path, repr(key)),
                        f"mapping key {key!r} is not text (a JSON object's keys are)",
                    )
                    continue
                name = self.text(key, (*path, key), "the key")
                out[name] = self.value(item, (*path, name))
            return out
        items: list[Any] = []
        self.done[id(value)] = items
        for index, item in enumerate(value):
            items.append(self.value(item, (*path, index)))
        return items

    def text(self, text: str, path: tuple[PathPart, ...], what: str) -> str:
        if _SURROGATE.search(text):
            try:  # YAML spells a pair as two escapes: join them into one character
                text = text.encode("utf-16", "surrogatepass").decode("utf-16")
            except UnicodeDecodeError:
                self.refuse(
                    "unpaired_surrogate", path, f"{what} contains an unpaired UTF-16 surrogate"
                )
                return text
        if "\x00" in text:
            self.refuse("nul_character", path, f"{what} contains a NUL character (U+0000)")
        return text


def _problem(code: str, root: Any, path: tuple[PathPart, ...], what: str) -> Problem:
    node: str | None = None
    label = ""
    rest = path
    if len(path) >= 2 and path[0] in ("nodes", "edges") and isinstance(path[1], int):
        items = root.get(path[0]) if isinstance(root, Mapping) else None
        item = items[path[1]] if isinstance(items, list) and path[1] < len(items) else None
        label = f"{path[0]}[{path[1]}]"
        rest = path[2:]
        if path[0] == "nodes" and isinstance(item, Mapping) and isinstance(item.get("key"), str):
            node = item["key"]
            label += f" (key {node!r})"
    field = _path(rest) or None
    where = label + ("." if label and field else "") + (field or "") or "the document"
    return Problem(code, f"{where}: {what}", node=node, field=field)


def _path(parts: tuple[PathPart, ...]) -> str:
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out
