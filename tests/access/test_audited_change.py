"""The operation audit of a service's change (SPEC A-2, issue 29 item 2):
:func:`~flowledger.access.audit.audited_change` commits the change and its
``ok`` row together; when the block raises, neither is kept and the
``failed`` row (the error's code and message) is written on its own. On
both backends."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.access.audit import AuditEntry, audited, audited_change, change_transaction
from flowledger.access.callers import Caller
from flowledger.clock import ManualClock
from flowledger.db.database import Database
from flowledger.db.engine_schema import operation_audit, workflow_messages
from flowledger.errors import NotFoundError
from flowledger.notify.messages import post_message

CALLER = Caller(
    user_id="ops", display_name="Ops", roles=(), permissions=frozenset(), tenants=("acme",)
)


@dataclass
class Ctx:
    db: Database
    clock: ManualClock

    def now(self) -> datetime:
        return self.clock.now()


class Missing(NotFoundError):
    code = "thing_not_found"


async def _post(conn: AsyncConnection, ctx: Ctx) -> int:
    return await post_message(
        conn, tenant="acme", recipient="mia", title="t", body="b", kind="note", now=ctx.now()
    )


async def _rows(db: Database) -> tuple[list[dict[str, Any]], int]:
    async with db.read() as conn:
        audit = [dict(r) for r in (await conn.execute(select(operation_audit))).mappings()]
        messages = len((await conn.execute(select(workflow_messages.c.id))).all())
    return audit, messages


async def test_the_change_and_its_row_commit_together(db: Database, clock: ManualClock) -> None:
    ctx = Ctx(db, clock)
    entry = AuditEntry.by(CALLER, "thing.create", "thing")
    async with audited_change(ctx, entry) as conn:
        entry.target_id = str(await _post(conn, ctx))
        entry.tenant_id = "acme"
    audit, messages = await _rows(db)
    assert messages == 1
    assert [(a["action"], a["result"], a["actor"], a["tenant_id"]) for a in audit] == [
        ("thing.create", "ok", "ops", "acme")
    ]
    assert audit[0]["target_id"] == entry.target_id


async def test_a_failure_keeps_no_change_and_records_why(db: Database, clock: ManualClock) -> None:
    ctx = Ctx(db, clock)
    entry = AuditEntry.by(CALLER, "thing.update", "thing", 7, reason="why")
    with pytest.raises(Missing):
        async with audited_change(ctx, entry) as conn:
            await _post(conn, ctx)
            entry.detail["seen"] = True
            raise Missing("thing 7 not found", field="thingId")
    audit, messages = await _rows(db)
    assert messages == 0  # rolled back
    assert len(audit) == 1
    row = audit[0]
    assert (row["action"], row["result"], row["target_id"], row["reason"]) == (
        "thing.update",
        "failed",
        "7",
        "why",
    )
    assert row["detail"] == {
        "seen": True,
        "code": "thing_not_found",
        "message": "thing 7 not found",
    }


async def test_an_unexpected_error_is_recorded_as_internal(
    db: Database, clock: ManualClock
) -> None:
    ctx = Ctx(db, clock)
    entry = AuditEntry.by(CALLER, "thing.delete", "thing", 8)
    with pytest.raises(RuntimeError):
        async with audited_change(ctx, entry):
            raise RuntimeError("boom")
    audit, _ = await _rows(db)
    assert [(a["result"], a["detail"]) for a in audit] == [("failed", {"code": "internal_error"})]


async def test_a_route_block_handing_its_entry_to_a_service_writes_one_row(
    db: Database, clock: ManualClock
) -> None:
    """``audited`` around a service that writes the entry's row in its own
    transaction (``change_transaction``, as the engine's facade does) adds
    no second row — ok or failed — and still writes the failed row of a
    check that refuses before the service ran."""
    ctx = Ctx(db, clock)
    async with (
        audited(ctx, CALLER, "thing.create", "thing") as entry,
        change_transaction(db, entry, clock.now) as conn,
    ):
        entry.target_id = str(await _post(conn, ctx))
    with pytest.raises(Missing):
        async with (
            audited(ctx, CALLER, "thing.update", "thing", 7) as entry,
            change_transaction(db, entry, clock.now) as conn,
        ):
            await _post(conn, ctx)
            raise Missing("thing 7 not found", field="thingId")
    with pytest.raises(Missing):
        async with audited(ctx, CALLER, "thing.delete", "thing", 8):
            raise Missing("thing 8 not found", field="thingId")  # refused before any service
    audit, messages = await _rows(db)
    assert messages == 1  # the failed update rolled back
    assert [(a["action"], a["result"]) for a in audit] == [
        ("thing.create", "ok"),
        ("thing.update", "failed"),
        ("thing.delete", "failed"),
    ]
