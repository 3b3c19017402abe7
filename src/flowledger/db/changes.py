"""Change notifications for the live console (issue 33 item 2): what changed,
coarse and tenant-scoped, and how it travels between processes.

A :class:`Change` names a topic (``jobs``, ``instances``, ``health``), the
tenant it belongs to (None: a job of no tenant, which only callers who see
every tenant are told about) and, for ``instances``, the instances touched
(empty: "some instances", when there were too many to list). It carries no
business data: a client that hears it reloads what it shows.

On PostgreSQL changes travel as one ``NOTIFY flowledger_changes`` per
coalescing window (the payload: a JSON list of changes, split to stay under
the server's 8000-byte limit) and :func:`listen_changes` receives them on a
dedicated connection. On SQLite nothing crosses processes: the publisher
hands its changes to the subscribers of its own process
(:mod:`flowledger.db.change_feed`).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import psycopg
import structlog
from sqlalchemy.engine import URL

from flowledger.db.urls import libpq_conninfo

log = structlog.get_logger("flowledger.changes")

CHANGES_CHANNEL = "flowledger_changes"
TOPICS = ("jobs", "instances", "health")
MAX_PAYLOAD = 7_900  # PostgreSQL refuses a NOTIFY payload of 8000 bytes or more
MAX_INSTANCE_IDS = 50  # more instances in one window: "some instances"


@dataclass(frozen=True)
class Change:
    """Something a console page shows changed in ``tenant``."""

    topic: str
    tenant: str | None
    instance_ids: tuple[int, ...] = ()

    def public(self) -> dict[str, object]:
        """The change as the event stream sends it (camelCase, like the API)."""
        return {"topic": self.topic, "tenant": self.tenant, "instanceIds": list(self.instance_ids)}


def encode(changes: Iterable[Change]) -> list[str]:
    """NOTIFY payloads (JSON lists) carrying ``changes``, each under the limit."""
    payloads: list[str] = []
    batch: list[str] = []
    size = 2
    for change in changes:
        item = json.dumps([change.topic, change.tenant, list(change.instance_ids)])
        if batch and size + len(item) + 1 > MAX_PAYLOAD:
            payloads.append("[" + ",".join(batch) + "]")
            batch, size = [], 2
        batch.append(item)
        size += len(item) + 1
    if batch:
        payloads.append("[" + ",".join(batch) + "]")
    return payloads


def decode(payload: str) -> list[Change]:
    """The changes of one NOTIFY payload; nothing for a malformed one."""
    try:
        items = json.loads(payload)
        changes = [
            Change(str(topic), None if tenant is None else str(tenant), tuple(map(int, ids)))
            for topic, tenant, ids in items
        ]
    except (ValueError, TypeError):
        log.warning("change_payload_malformed", payload=payload[:200])
        return []
    return [c for c in changes if c.topic in TOPICS]


async def listen_changes(
    url: URL,
    deliver: Callable[[list[Change]], None],
    stop: asyncio.Event,
    listening: asyncio.Event,
) -> None:
    """LISTEN on :data:`CHANGES_CHANNEL` and hand every change to ``deliver``
    until ``stop`` is set; ``listening`` is set once the LISTEN holds.
    Reconnects with backoff (changes sent meanwhile are lost: the console's
    polling covers them)."""
    conninfo = libpq_conninfo(url)
    delay = 0.1
    while not stop.is_set():
        try:
            async with await psycopg.AsyncConnection.connect(conninfo, autocommit=True) as conn:
                await conn.execute(f"LISTEN {CHANGES_CHANNEL}")
                listening.set()
                delay = 0.1
                while not stop.is_set():
                    async for notify in conn.notifies(timeout=0.5):
                        deliver(decode(notify.payload))
        except (psycopg.Error, OSError) as exc:
            listening.clear()
            log.warning("change_listener_reconnecting", error=str(exc))
            try:
                async with asyncio.timeout(delay):
                    await stop.wait()
            except TimeoutError:
                pass
            delay = min(delay * 2, 5.0)
