"""What is wrong with a definition: :class:`Problem` and :class:`DefinitionError`.

Owns the report format shared by parsing (``parse``) and checking
(``validate``, ``graph``). A problem has a stable machine-readable ``code``, a
human message, and names what it is about: a node key, an edge as
``"from->to"``, and/or a field path (``call.url``, ``form.fields``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

from flowledger.errors import FlowledgerError

_UNSHOWABLE = re.compile("[\x00\ud800-\udfff]")


def printable(text: str) -> str:
    """``text`` with NUL characters and lone surrogates escaped (``\\x00``,
    ``\\ud800``): a report quoting a hostile document must itself be
    encodable as UTF-8 and storable in PostgreSQL (issue 31 item 6)."""
    return _UNSHOWABLE.sub(lambda m: ascii(m.group(0))[1:-1], text)


def _shown_problem(problem: Problem) -> Problem:
    values = {
        name: printable(value)
        for name in ("message", "node", "edge", "field")
        if isinstance(value := getattr(problem, name), str) and _UNSHOWABLE.search(value)
    }
    return replace(problem, **values) if values else problem


@dataclass(frozen=True, slots=True)
class Problem:
    code: str
    message: str
    node: str | None = None
    edge: str | None = None
    field: str | None = None

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class DefinitionError(FlowledgerError):
    """A definition that cannot be deployed; ``problems`` lists every problem found."""

    code = "definition_invalid"

    def __init__(self, problems: Sequence[Problem], message: str | None = None) -> None:
        self.problems: list[Problem] = [_shown_problem(p) for p in problems]
        if message is None:
            count = len(self.problems)
            shown = "; ".join(p.message for p in self.problems[:5])
            more = f"; and {count - 5} more" if count > 5 else ""
            message = f"definition invalid ({count} problem{'s' if count != 1 else ''}): "
            message += shown + more
        super().__init__(printable(message), problems=[p.to_dict() for p in self.problems])
