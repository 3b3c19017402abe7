"""Retention's walk of tokens and trace ends at the last row created before
the cut-off (issue 34, SPEC O-20): :func:`last_id_created_before` bisects
the primary key of an append-only table — right with gaps from earlier
deletes, with no row before the cut-off, with every row before it — on both
backends. (The table here is the operation audit: any table with an integer
``id`` and ``created_at`` will do.)"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import delete, insert

from flowledger.db.database import Database
from flowledger.db.engine_schema import operation_audit as audit
from flowledger.ops.retention.purge import last_id_created_before

T0 = datetime(2026, 9, 1, tzinfo=UTC)


async def _rows(db: Database, n: int) -> list[int]:
    """``n`` rows, one a minute from T0, ids in the same order."""
    row = {"actor": "a", "action": "x", "target_type": "t", "result": "ok"}
    async with db.begin() as conn:
        for minute in range(n):
            await conn.execute(
                insert(audit).values(**row, created_at=T0 + timedelta(minutes=minute))
            )
    async with db.read() as conn:
        return [
            int(i)
            for (i,) in await conn.execute(
                audit.select().with_only_columns(audit.c.id).order_by(audit.c.id)
            )
        ]


async def _bound(db: Database, before: datetime) -> int:
    async with db.read() as conn:
        return await last_id_created_before(conn, audit, before)


async def test_the_bound_is_the_last_row_created_before_the_cutoff_O20(db: Database) -> None:
    assert await _bound(db, T0 + timedelta(days=1)) == 0  # an empty table
    ids = await _rows(db, 100)
    for minute in (1, 2, 37, 64, 99):
        assert await _bound(db, T0 + timedelta(minutes=minute)) == ids[minute - 1]
    assert await _bound(db, T0) == 0  # nothing before
    assert await _bound(db, T0 + timedelta(days=1)) == ids[-1]  # everything before
    # gaps left by earlier deletes: the bound is the last row still there
    async with db.begin() as conn:
        await conn.execute(delete(audit).where(audit.c.id.in_(ids[30:60])))
    assert await _bound(db, T0 + timedelta(minutes=45)) == ids[29]
    assert await _bound(db, T0 + timedelta(minutes=61)) == ids[60]
