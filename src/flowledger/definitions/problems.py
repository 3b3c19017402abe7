"""What is wrong with a definition: :class:`Problem` and :class:`DefinitionError`.

Owns the report format shared by parsing (``parse``) and checking
(``validate``, ``graph``). A problem has a stable machine-readable ``code``, a
human message, and names what it is about: a node key, an edge as
``"from->to"``, and/or a field path (``call.url``, ``form.fields``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from flowledger.errors import FlowledgerError


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
        self.problems: list[Problem] = list(problems)
        if message is None:
            count = len(self.problems)
            shown = "; ".join(p.message for p in self.problems[:5])
            more = f"; and {count - 5} more" if count > 5 else ""
            message = f"definition invalid ({count} problem{'s' if count != 1 else ''}): "
            message += shown + more
        super().__init__(message, problems=[p.to_dict() for p in self.problems])
