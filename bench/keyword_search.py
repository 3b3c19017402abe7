"""Keyword search at scale on PostgreSQL (issue 17 item 7).

    python bench/keyword_search.py --jobs 1000000

Creates (and afterwards drops) its own database ``flowledger_bench_keyword``
on the server of ``--admin`` (default ``postgresql://postgres@127.0.0.1:5432/postgres``),
migrates it (migration 0012 builds the pg_trgm indexes), inserts N jobs with
varied errors by one ``generate_series`` INSERT, ANALYZEs, then times the job
list as the API serves it (``ops.jobs.queries.list_jobs`` with
``JobFilter(keyword=…)``, newest first, limit 50: the recent-window probe,
then the trigram query when the window holds too few matches) for selective
and broad keywords, 5 runs each (the first warms the cache). ``--explain``
prints the window query's plans. Last line:
``jobs=… keyword_p50_ms=… keyword_max_ms=…``.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

import psycopg
from sqlalchemy import text

from flowledger.db.database import Database
from flowledger.db.migrate import upgrade
from flowledger.ops.jobs import queries as job_queries
from flowledger.ops.jobs.filters import JobFilter

NAME = "flowledger_bench_keyword"
# selective (a few dozen matches, ~2,800, none) and broad (a quarter of all
# jobs: "100%", "user_id", "http_call" by type)
KEYWORDS = ("timeout 4711", "erp-77", "zzz-nothing", "100%", "user_id", "http_call", "md5")

FILL = """
INSERT INTO workflow_jobs (type, pool, status, payload, tenant_id, priority, run_at,
  attempts, max_attempts, generation, execution_timeout_ms, operation_key, trace_id,
  last_error, created_at, updated_at)
SELECT
  (ARRAY['http_call','engine_advance','notify_email','schedule_launch'])[1 + g % 4],
  'ledger', (ARRAY['succeeded','dead','failed','pending'])[1 + g % 4], '{}'::jsonb,
  'default', 0, now(), 1, 5, 1, 60000, 'op-' || g, 'tr-' || g,
  CASE WHEN g % 4 = 0 THEN NULL
       ELSE (ARRAY['connection timeout ', 'HTTP 503 from erp-', 'quota at 100% for user_id ',
                   'validation failed: '])[1 + g % 4]
            || (g % 10007)::text || ' md5 ' || md5(g::text)
  END,
  now() - (g || ' seconds')::interval, now()
FROM generate_series(1, :n) AS g
"""


async def main(args: argparse.Namespace) -> None:
    base = args.admin.rsplit("/", 1)[0]
    with psycopg.connect(args.admin, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{NAME}"')
        admin.execute(f'CREATE DATABASE "{NAME}"')
    db = Database(f"{base}/{NAME}")
    try:
        started = time.monotonic()
        await upgrade(db)
        async with db.begin() as conn:
            await conn.execute(text(FILL), {"n": args.jobs})
        async with db.begin() as conn:
            await conn.execute(text("ANALYZE workflow_jobs"))
        print(f"filled {args.jobs} jobs (indexes maintained) in {time.monotonic() - started:.1f} s")
        timings: list[float] = []
        for keyword in KEYWORDS:
            flt = JobFilter(keyword=keyword, tenants=("default",))
            runs = []
            for _ in range(5):
                t0 = time.perf_counter()
                page = await job_queries.list_jobs(db, flt, limit=50)
                runs.append((time.perf_counter() - t0) * 1000)
            if args.explain:
                query = job_queries._recent_keyword_page(flt, None, 50)
                async with db.read() as conn:
                    sql = query.compile(
                        conn.sync_connection, compile_kwargs={"literal_binds": True}
                    )
                    plan = (await conn.execute(text(f"EXPLAIN ANALYZE {sql}"))).scalars().all()
                print("\n".join(plan))
            print(
                f"keyword={keyword!r}: rows={len(page['items'])} "
                f"runs_ms={[round(r, 1) for r in runs]}"
            )
            timings.extend(runs[1:])  # the first run warms the cache
        print(
            f"jobs={args.jobs} keyword_p50_ms={statistics.median(timings):.1f} "
            f"keyword_max_ms={max(timings):.1f}"
        )
    finally:
        await db.dispose()
        with psycopg.connect(args.admin, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{NAME}"')


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--jobs", type=int, default=1_000_000)
    parser.add_argument("--explain", action="store_true", help="print the window query's plans")
    parser.add_argument("--admin", default="postgresql://postgres@127.0.0.1:5432/postgres")
    asyncio.run(main(parser.parse_args()))
