"""A streaming replica's position (issue 34 item 6): how far its replay
trails the primary, asked on the replica itself. Owns that one query."""

from __future__ import annotations

import structlog
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

from flowledger.db.database import Database

log = structlog.get_logger("flowledger.db")

# 0 when everything received is replayed (an idle primary sends nothing, and
# the last replayed commit may be old); else the age of the last replayed
# commit — the primary has committed since, and the replica has not caught
# up. NULL when the server is not in recovery (not a replica) or has
# replayed no commit yet.
_LAG_MS = text(
    """
    SELECT CASE
      WHEN NOT pg_is_in_recovery() THEN NULL
      WHEN pg_last_wal_receive_lsn() IS NOT NULL
           AND pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn() THEN 0
      ELSE (extract(epoch FROM clock_timestamp() - pg_last_xact_replay_timestamp()) * 1000)
    END AS lag_ms
    """
)


async def replica_lag_ms(replica: Database) -> float | None:
    """How many milliseconds ``replica``'s replay trails its primary (see
    ``_LAG_MS``); None when it is not a replica or cannot say — also when it
    cannot be reached (logged): the primary's status is still worth showing."""
    try:
        async with replica.read() as conn:
            value = (await conn.execute(_LAG_MS)).scalar_one()
    except (DBAPIError, OSError) as exc:
        log.warning("replica_lag_unknown", error=str(exc))
        return None
    return None if value is None else max(0.0, float(value))
