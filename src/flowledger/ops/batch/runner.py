"""The batch runner (issue 29 item 4): runs an action per item, in order,
at most ``rate`` items per second (item k starts no earlier than
``start + k / rate``), each item in its own transaction — the action opens
and owns it, so one item's rollback never touches another's. An action
answers the item's :class:`~flowledger.ops.batch.outcome.ItemOutcome`; an
exception it raises becomes that item's ``failed`` outcome and the run goes
on. Progress is reported every ``progress_every`` items and at the end (the
recorder writes it to the batch's row)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

from flowledger.ops.batch.outcome import ItemOutcome, failed_from

T = TypeVar("T")
Act = Callable[[T], Awaitable[ItemOutcome]]
Progress = Callable[[list[ItemOutcome]], Awaitable[None]]
PROGRESS_EVERY = 50


async def run_items(
    items: Sequence[T],
    act: Callable[[T], Awaitable[ItemOutcome]],
    *,
    key: Callable[[T], int | str],
    rate: float | None = None,
    progress: Progress | None = None,
    progress_every: int = PROGRESS_EVERY,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    monotonic: Callable[[], float] = time.monotonic,
) -> list[ItemOutcome]:
    """Each item's outcome, in the items' order; see the module docstring."""
    if rate is not None and rate <= 0:
        raise ValueError("rate must be positive")
    outcomes: list[ItemOutcome] = []
    start = monotonic()
    for k, item in enumerate(items):
        if rate is not None and k:
            wait = start + k / rate - monotonic()
            if wait > 0:
                await sleep(wait)
        try:
            outcome = await act(item)
        except Exception as exc:  # the item fails, the batch goes on
            outcome = failed_from(key(item), exc)
        outcomes.append(outcome)
        if progress is not None and len(outcomes) % progress_every == 0:
            await progress(outcomes)
    if progress is not None and len(outcomes) % progress_every:
        await progress(outcomes)
    return outcomes
