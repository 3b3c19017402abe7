"""The shared batch shapes of the API (issue 29 item 4): the per-item
``result`` (``done`` / ``skipped`` / ``failed``), the ``counts`` every
batch endpoint adds, and the recorded batch operation that
``GET /engine/batches`` lists and ``GET /engine/batches/{batchId}``
describes. The console's ``BatchResult`` component reads these."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from flowledger.api.schemas import ApiModel

ItemResult = Literal["done", "skipped", "failed"]


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
