"""The live console's event stream (issue 33 item 2):
``GET /api/workflows/events/stream``, server-sent events.

It authenticates like every other route — ``Authorization: Bearer`` and
``workflow:instance:monitor`` (401/403 otherwise) — so no token ever travels
in a URL: the console reads the stream with ``fetch`` (the browser's
``EventSource`` cannot send the header). It is left out of the OpenAPI
document (a never-ending ``text/event-stream`` is no JSON operation).

Events, in the order sent:

- ``event: hello`` ``{"scope": "database" | "process", "heartbeatSeconds"}``
  once subscribed: ``database`` — every process's changes arrive here
  (PostgreSQL); ``process`` — only this process's (SQLite: a worker in
  another process is not heard, the console keeps polling for it);
- ``event: change`` ``{"topic", "tenant", "instanceIds"}`` for each change of
  the database's feed (:mod:`flowledger.db.change_feed`) in a tenant the
  caller sees (a change of no tenant: only to callers who see every tenant);
  changes arriving together are sent once each;
- ``: ping`` comments every :data:`HEARTBEAT_S` seconds while nothing else
  is sent.

The stream ends after :data:`MAX_STREAM_S` (the client reconnects, and its
token is checked again) and when the server stops (``ChangeFeed.close``),
within :data:`TICK_S`.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator

from fastapi import APIRouter
from fastapi.responses import StreamingResponse

from flowledger.api.auth import Caller, CurrentCaller
from flowledger.api.deps import Ctx
from flowledger.api.permissions import INSTANCE_MONITOR
from flowledger.api.route_access import GuardedRoute, allow
from flowledger.db.change_feed import ChangeFeed
from flowledger.db.changes import Change

router = APIRouter(prefix="/events", tags=["events"], route_class=GuardedRoute)

HEARTBEAT_S = 15.0
MAX_STREAM_S = 600.0
TICK_S = 0.5


def visible(caller: Caller, change: Change) -> bool:
    """Whether ``caller`` may hear of ``change`` (its tenant, SPEC A-3)."""
    if caller.all_tenants:
        return True
    return change.tenant is not None and change.tenant in caller.tenants


def _event(name: str, data: object) -> str:
    return f"event: {name}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n"


async def _next_changes(feed_queue: asyncio.Queue[Change], wait_s: float) -> list[Change]:
    """What arrives within ``wait_s`` (nothing: an empty list), with
    everything queued behind it."""
    try:
        async with asyncio.timeout(wait_s):
            first = await feed_queue.get()
    except TimeoutError:
        return []
    changes = [first]
    while not feed_queue.empty():
        changes.append(feed_queue.get_nowait())
    return changes


async def events(
    feed: ChangeFeed, caller: Caller, *, heartbeat_s: float = HEARTBEAT_S
) -> AsyncIterator[str]:
    """The stream's text for ``caller`` (see the module docstring)."""
    async with feed.subscribe() as subscription:
        yield _event("hello", {"scope": feed.scope, "heartbeatSeconds": heartbeat_s})
        started = last_sent = time.monotonic()
        while not subscription.closed.is_set():
            now = time.monotonic()
            if now - started >= MAX_STREAM_S:
                return
            changes = await _next_changes(subscription.queue, TICK_S)
            sent = False
            for change in dict.fromkeys(c for c in changes if visible(caller, c)):
                yield _event("change", change.public())
                sent = True
            now = time.monotonic()
            if sent:
                last_sent = now
            elif now - last_sent >= heartbeat_s:
                yield ": ping\n\n"
                last_sent = now


@router.get("/stream", include_in_schema=False, dependencies=[allow(INSTANCE_MONITOR)])
async def stream_events(ctx: Ctx, caller: CurrentCaller) -> StreamingResponse:
    """Server-sent change events for the caller's tenants."""
    return StreamingResponse(
        events(ctx.db.changes, caller),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )
