"""Engine diagnostics and recovery previews through the HTTP API (issue 11,
SPEC O-18).

    PYTHONPATH=src:bench python bench/recovery_ops.py --db URL --jobs 100000

The database at URL is migrated and its ledger tables are EMPTIED first, then
filled by ``ops_queries.fill`` (the job-ledger operations bench's realistic
mix: ~88 % succeeded, pending due and future, a few stuck running, paused,
canceled, dead and failed jobs over 30 days, four tenants, a few nodes). No
instances or tasks are filled, so the "missing job" queries of a preview run
against empty task tables: this measures the job-side queries. Then 20 timed
calls (after 2 warm-ups) of ``GET /engine/diagnostics`` as an admin and as a
one-tenant monitor, and of ``POST /engine/recovery/{action}/preview`` for
each action (limit 100). Prints each median; last line:
``diagnostics_ms=… diagnostics_tenant_ms=… preview_max_ms=…``.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from datetime import UTC, datetime

import httpx

from flowledger.api import create_app
from flowledger.api.auth import create_user, issue_token
from flowledger.db.database import Database
from flowledger.ops.recovery.model import ACTIONS
from ops_queries import admin_token, fill, reset, timed

BASE = "/api/workflows/engine"


async def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--db", required=True, help="database URL (its ledger is emptied)")
    parser.add_argument("--jobs", type=int, default=100_000)
    args = parser.parse_args()

    db = Database(args.db)
    now = datetime.now(UTC)
    await reset(db)
    t0 = time.perf_counter()
    await fill(db, args.jobs, now)
    print(f"filled {args.jobs} jobs in {time.perf_counter() - t0:.1f} s")
    admin = await admin_token(db, now)
    async with db.begin() as conn:
        await create_user(
            conn, "bench-mon", permissions=["workflow:instance:monitor"], tenants=["acme"], now=now
        )
        monitor = await issue_token(conn, "bench-mon", now=now)
    transport = httpx.ASGITransport(app=create_app(db))
    async with httpx.AsyncClient(transport=transport, base_url="http://bench") as client:
        as_admin = {"Authorization": f"Bearer {admin}"}
        diag = await timed(client, "GET", f"{BASE}/diagnostics", headers=as_admin)
        scoped = await timed(
            client, "GET", f"{BASE}/diagnostics", headers={"Authorization": f"Bearer {monitor}"}
        )
        previews = [
            await timed(
                client,
                "POST",
                f"{BASE}/recovery/{action}/preview",
                headers=as_admin,
                json={"limit": 100},
            )
            for action in ACTIONS
        ]
    await db.dispose()
    print(
        f"diagnostics_ms={diag:.1f} diagnostics_tenant_ms={scoped:.1f} "
        f"preview_max_ms={max(previews):.1f}"
    )


if __name__ == "__main__":
    asyncio.run(main())
