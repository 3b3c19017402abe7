"""Shared pieces of the connector tests (SPEC X-3): a fresh Fernet key per
test (never the key file), connectors created through the store, a test job
type whose handler calls :func:`call_connector` with what its payload says,
and readers for the call audit. Holds no tests itself."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest
import structlog
from cryptography.fernet import Fernet
from sqlalchemy import select

from flowledger.clock import ManualClock
from flowledger.db.connector_schema import connector_calls
from flowledger.db.database import Database
from flowledger.ledger.models import JobSpec
from flowledger.outbound.connector_config import BreakerSettings, ConnectorDraft, RateLimit
from flowledger.outbound.connector_store import Connector, create_connector
from flowledger.outbound.connectors import call_connector
from flowledger.outbound.job_calls import OutboundRequest
from flowledger.states import Pool
from flowledger.worker.context import JobContext
from tests.ledger_access import ledger_of
from tests.runtime_support import TEST_HANDLERS, process_outbound, process_secrets

TENANT = "acme"
RAISED: dict[int, BaseException] = {}


@pytest.fixture
def secret_key(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A fresh Fernet key in FLOWLEDGER_SECRET_KEY, with the settings
    rebuilt from it (and again afterwards)."""
    key = Fernet.generate_key().decode()
    monkeypatch.setenv("FLOWLEDGER_SECRET_KEY", key)
    yield key


def use_other_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """Switch the process to a different secret key (stored secrets become unreadable)."""
    monkeypatch.setenv("FLOWLEDGER_SECRET_KEY", Fernet.generate_key().decode())


async def make_connector(
    db: Database,
    clock: ManualClock,
    base_url: str,
    *,
    key: str = "erp",
    tenant: str = TENANT,
    rate: tuple[float, int] | None = None,
    breaker: tuple[int, float] = (5, 30.0),
    **fields: Any,
) -> Connector:
    draft = ConnectorDraft(
        key=key,
        name=f"{key} connector",
        base_url=base_url,
        rate_limit=None if rate is None else RateLimit(*rate),
        circuit_breaker=BreakerSettings(*breaker),
        **fields,
    )
    async with db.begin() as conn:
        return await create_connector(
            conn, draft, tenant=tenant, actor="test", now=clock.now(), box=process_secrets()
        )


async def _connector_call(ctx: JobContext) -> Any:
    p = ctx.payload
    request = OutboundRequest(
        p.get("method", "GET"),
        p["path"],
        p.get("headers", {}),
        p.get("body"),
        p.get("idempotent", False),
    )
    try:
        result = await call_connector(
            ctx,
            tenant_id=p.get("tenant", TENANT),
            connector_key=p["connector"],
            request=request,
            outbound=process_outbound(),
        )
    except BaseException as exc:
        RAISED[ctx.job.id] = exc
        raise
    return {"status": result.status, "body": result.text()}


CALL = TEST_HANDLERS.register(
    "ct_connector_call", _connector_call, pool=Pool.OUTBOUND, max_attempts=3
)


async def add_call(
    db: Database, clock: ManualClock, *, instance_id: int | None = None, **payload: Any
) -> int:
    payload.setdefault("connector", "erp")
    async with db.begin() as conn:
        spec = JobSpec(
            type=CALL.job_type, payload=payload, tenant_id=TENANT, instance_id=instance_id
        )
        return (await ledger_of(conn).job_insert(conn, spec, now=clock.now())).job_id


async def call_rows(db: Database) -> list[dict[str, Any]]:
    async with db.read() as conn:
        result = await conn.execute(select(connector_calls).order_by(connector_calls.c.id))
        return [dict(r) for r in result.mappings().all()]


class LogCapture:
    """Everything logged while active: structlog event dicts and stdlib
    records down to DEBUG (httpx and httpcore included)."""

    def __init__(self, caplog: pytest.LogCaptureFixture) -> None:
        self.caplog = caplog
        self.events: list[Any] = []

    def __enter__(self) -> LogCapture:
        self.caplog.set_level(logging.DEBUG)
        self._structlog = structlog.testing.capture_logs()
        self.events = self._structlog.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._structlog.__exit__(None, None, None)

    @property
    def text(self) -> str:
        records = [f"{r.getMessage()} {r.args!r}" for r in self.caplog.records]
        return "\n".join([repr(e) for e in self.events] + records)
