"""Liveness checks of pooled PostgreSQL connections: a connection is pinged
at checkout only when it has sat idle in the pool longer than
:data:`IDLE_PING_S`. SQLAlchemy's ``pool_pre_ping`` pinged at *every*
checkout — one extra round trip and one extra server transaction per
transaction (``bench/engine_throughput.py``: 17.3 → 11.3 server commits per
instance without it, issue 15 item 2).

What it still catches: a connection the server dropped (a restart, an
idle-session timeout) is found before use whenever it idled longer than the
threshold, and a restart takes longer than that, so every connection used
before a restart is pinged after it. A failed ping raises
:class:`~sqlalchemy.exc.DisconnectionError`: the pool drops that connection
and hands out a new one, as pre-ping does. What it no longer catches: a
connection killed on its own (``pg_terminate_backend``) and checked out
within the threshold fails its statement once, as any connection killed
after its ping would; the pool then invalidates the connections opened
before (SQLAlchemy does that on every disconnect error)."""

from __future__ import annotations

import time
from typing import Any

from sqlalchemy import event, exc
from sqlalchemy.engine import Engine

IDLE_PING_S = 0.25
_USED_AT = "flowledger_used_at"


def ping_when_idle(engine: Engine, *, idle_s: float = IDLE_PING_S) -> None:
    """Install the checks on ``engine`` (the sync engine of an async one)."""
    dialect = engine.dialect

    def touch(_dbapi_connection: Any, record: Any) -> None:
        record.info[_USED_AT] = time.monotonic()

    def checkout(dbapi_connection: Any, record: Any, _proxy: Any) -> None:
        used_at = record.info.get(_USED_AT)
        if used_at is not None and time.monotonic() - used_at <= idle_s:
            return
        try:
            dialect.do_ping(dbapi_connection)
        except dialect.loaded_dbapi.Error as error:
            raise exc.DisconnectionError(f"pooled connection lost: {error}") from error
        record.info[_USED_AT] = time.monotonic()

    event.listen(engine, "connect", touch)
    event.listen(engine, "checkin", touch)
    event.listen(engine, "checkout", checkout)
