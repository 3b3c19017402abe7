"""The one outcome vocabulary of a batch item (issue 29 item 4):
``done``, ``skipped`` with a reason (and a machine code), or ``failed`` with
an error ``{code, message}``; and :class:`Counts` over a batch's outcomes.

A batch's older endpoints keep their own outcome words (``advanced``,
``suspended``, ``submitted`` …) in ``outcome``; the same item's ``result``
is always one of these three."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from flowledger.errors import FlowledgerError

Result = Literal["done", "skipped", "failed"]
DONE: Final = "done"
SKIPPED: Final = "skipped"
FAILED: Final = "failed"


@dataclass(frozen=True)
class ItemOutcome:
    """What happened to one item of a batch; ``detail`` keeps what the
    batch's own endpoint says of it (its ids, its older outcome word …)."""

    key: int | str
    result: Result
    reason: str | None = None
    code: str | None = None
    error: dict[str, str] | None = None
    detail: dict[str, Any] = field(default_factory=dict)

    def public(self) -> dict[str, Any]:
        """``{key, result, reason?, code?, error?}``: the shared item shape."""
        out: dict[str, Any] = {"key": self.key, "result": self.result}
        if self.reason is not None:
            out["reason"] = self.reason
        if self.code is not None:
            out["code"] = self.code
        if self.error is not None:
            out["error"] = self.error
        return out

    def doc(self, key_name: str, done_word: str = DONE) -> dict[str, Any]:
        """The item as a batch's own endpoint writes it: ``{<key_name>,
        outcome, result, reason?, error?, …detail}`` — ``outcome`` the
        endpoint's older word for done (``advanced``, ``suspended`` …),
        ``result`` the shared one."""
        out: dict[str, Any] = {
            key_name: self.key,
            "outcome": done_word if self.result == DONE else self.result,
            "result": self.result,
        }
        if self.reason is not None:
            out["reason"] = self.reason
        if self.error is not None:
            out["error"] = self.error
        out.update(self.detail)
        return out


def done(key: int | str, **detail: Any) -> ItemOutcome:
    return ItemOutcome(key, DONE, detail=detail)


def skipped(key: int | str, reason: str, code: str | None = None, **detail: Any) -> ItemOutcome:
    return ItemOutcome(key, SKIPPED, reason=reason, code=code, detail=detail)


def failed(key: int | str, code: str, message: str, **detail: Any) -> ItemOutcome:
    return ItemOutcome(
        key, FAILED, code=code, error={"code": code, "message": message}, detail=detail
    )


def failed_from(key: int | str, exc: BaseException, **detail: Any) -> ItemOutcome:
    """A failed item for ``exc``: a typed error's code and message, else
    ``internal_error`` with the exception's type name (never its text)."""
    if isinstance(exc, FlowledgerError):
        return failed(key, exc.code, exc.message, **detail)
    return failed(key, "internal_error", type(exc).__name__, **detail)


@dataclass(frozen=True)
class Counts:
    total: int = 0
    done: int = 0
    skipped: int = 0
    failed: int = 0

    @classmethod
    def of(cls, outcomes: Iterable[ItemOutcome], total: int | None = None) -> Counts:
        tally: dict[str, int] = {DONE: 0, SKIPPED: 0, FAILED: 0}
        for outcome in outcomes:
            tally[outcome.result] += 1
        handled = sum(tally.values())
        return cls(
            total=handled if total is None else max(total, handled),
            done=tally[DONE],
            skipped=tally[SKIPPED],
            failed=tally[FAILED],
        )

    @property
    def processed(self) -> int:
        return self.done + self.skipped + self.failed

    def public(self) -> dict[str, int]:
        return {
            "total": self.total,
            "done": self.done,
            "skipped": self.skipped,
            "failed": self.failed,
        }
