"""The shared batch shapes of the API (issue 29 item 4): the per-item
``result`` (``done`` / ``skipped`` / ``failed``), the ``counts`` every
batch endpoint adds, a batch's ``rate`` (items per second, 1 to 200) and
its ``estimatedCompletion`` window at that rate, and the recorded batch
operation that ``GET /engine/batches`` lists and
``GET /engine/batches/{batchId}`` describes. The console's ``BatchResult``
and ``BatchPreview`` components read these."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import Field

from flowledger.api.schemas import ApiModel
from flowledger.ops.batch.pacing import MAX_PACED_SECONDS, MAX_RATE, MIN_RATE

ItemResult = Literal["done", "skipped", "failed"]
Rate = Annotated[int, Field(ge=MIN_RATE, le=MAX_RATE)]
# the batches that act on each item at once, inside the request
PACED_RATE_DESCRIPTION = (
    f"Items per second ({MIN_RATE} to {MAX_RATE}): the k-th selected instance is acted "
    "on no earlier than k / rate seconds after the first; none: all at once. The run "
    f"holds the request, so one longer than {MAX_PACED_SECONDS} s at this rate (count / "
    "rate) is refused before anything is written: 422 `rate_too_slow` naming `rate`, with "
    "`count`, `rate`, `maxSeconds` and `minRate` (the smallest rate that passes). A dry run "
    "is not paced: it answers the run's `estimatedCompletion` at the rate."
)


class CompletionWindow(ApiModel):
    """When a batch at its rate has started every item: from now to now +
    count / rate."""

    start: datetime = Field(alias="from")
    end: datetime = Field(alias="to")


class BatchCounts(ApiModel):
    total: int
    done: int
    skipped: int
    failed: int


class BatchItemPublic(ApiModel):
    key: int | str
    result: ItemResult
    reason: str | None = None
    code: str | None = None
    error: dict[str, str] | None = None


class BatchOperationSummary(ApiModel):
    id: str
    kind: str
    state: Literal["running", "completed", "failed"]
    dry_run: bool
    actor: str
    reason: str | None
    request: dict[str, Any]
    counts: BatchCounts
    processed: int
    error: str | None
    started_at: datetime
    updated_at: datetime
    finished_at: datetime | None


class BatchOperationPublic(BatchOperationSummary):
    results: list[BatchItemPublic]


class BatchOperationList(ApiModel):
    items: list[BatchOperationSummary]
    next: str | None
