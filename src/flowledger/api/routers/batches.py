"""Recorded batch operations under ``/api/workflows/engine/batches``
(issue 29 item 4), as Temporal's DescribeBatchOperation / ListBatchOperations:

- ``GET /engine/batches`` — the newest first, ``{items, next}`` (keyset
  cursor), optionally one ``kind`` (``instance.batch_recover``,
  ``definition.suspend_all``, ``recovery.<action>``, ``job.batch_retry`` …);
- ``GET /engine/batches/{batchId}`` — one batch: state, counts, progress and
  every item's ``result``; 404 ``not_found`` for an id that does not exist or
  lies outside the caller's tenants.

Both need ``workflow:engine:operate``, the permission of the batches
themselves. The records are written by :mod:`flowledger.ops.batch`."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from fastapi import APIRouter, Path, Query

from flowledger.api.auth import CurrentCaller
from flowledger.api.batch_schemas import BatchOperationList, BatchOperationPublic
from flowledger.api.deps import Ctx
from flowledger.api.pagination import DEFAULT_LIMIT, Cursor, Limit, decode_cursor, encode_cursor
from flowledger.api.permissions import ENGINE_OPERATE
from flowledger.api.route_access import GuardedRoute, allow
from flowledger.errors import NotFoundError
from flowledger.ops import batch

router = APIRouter(prefix="/engine/batches", tags=["batches"], route_class=GuardedRoute)

BatchId = Annotated[str, Path(alias="batchId", min_length=1, max_length=64)]
Kind = Annotated[str | None, Query(max_length=64, description="Only batches of this kind.")]


@router.get("", response_model=BatchOperationList, dependencies=[allow(ENGINE_OPERATE)])
async def list_batch_operations(
    ctx: Ctx,
    caller: CurrentCaller,
    kind: Kind = None,
    limit: Limit = DEFAULT_LIMIT,
    cursor: Cursor = None,
) -> BatchOperationList:
    """The batch operations, newest first, with their counts."""
    after = decode_cursor(cursor, (datetime, str))
    items, nxt = await batch.list_batches(
        ctx.db,
        tenants=caller.tenant_scope,
        kind=kind,
        limit=limit,
        after=None if after is None else (after[0], after[1]),
    )
    return BatchOperationList.model_validate(
        {"items": items, "next": None if nxt is None else encode_cursor(nxt)}
    )


@router.get("/{batchId}", response_model=BatchOperationPublic, dependencies=[allow(ENGINE_OPERATE)])
async def describe_batch_operation(
    batch_id: BatchId, ctx: Ctx, caller: CurrentCaller
) -> BatchOperationPublic:
    """One batch operation: state, counts, progress and per-item results."""
    doc = await batch.describe(ctx.db, batch_id, tenants=caller.tenant_scope)
    if doc is None:
        raise NotFoundError(f"batch {batch_id} not found", field="batchId")
    return BatchOperationPublic.model_validate(doc)
