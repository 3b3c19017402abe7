"""What a batch would act on (issue 29 item 4): the selected keys (at most
a batch's cap, ``truncated`` when more matched) and the explicit keys that do
not qualify, already ``skipped`` with their reason; its dry run counts and
samples without writing."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from flowledger.ops.batch.outcome import ItemOutcome

T = TypeVar("T")
SAMPLE_SIZE = 20


@dataclass(frozen=True)
class Selection(Generic[T]):
    items: Sequence[T]
    truncated: bool = False
    skipped: list[ItemOutcome] = field(default_factory=list)

    @property
    def count(self) -> int:
        return len(self.items)

    def sample(self, size: int = SAMPLE_SIZE) -> list[T]:
        return list(self.items[:size])

    def dry_run(self, size: int = SAMPLE_SIZE) -> dict[str, Any]:
        """``{count, sample, truncated}``: the shared dry-run shape."""
        return {"count": self.count, "sample": self.sample(size), "truncated": self.truncated}
