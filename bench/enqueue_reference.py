"""The ledger's bulk enqueue against the plain insert of the same rows
(issue 32's bar: within 1.2 times ``INSERT … SELECT … FROM unnest`` of the
same rows, measured on the same database).

    python bench/enqueue_reference.py --db postgresql://… [--jobs 20000] [--rounds 3]

Each round, alternated: the ledger's enqueue (``bench/ledger_throughput.py``'s
``bulk_enqueue``: ``LedgerDriver.jobs_insert`` in chunks of 5,000, a
transaction each) into the emptied ledger; then the rows it wrote are read
back, the ledger emptied again, and the same rows (every column but ``id``)
inserted by one ``INSERT INTO workflow_jobs (…) SELECT * FROM unnest(…)`` of
typed arrays sent from here, in one transaction — the reference. The table
and its indexes are the same for both. Last line::

    enqueue_s=… reference_s=… enqueue_ratio=…   (medians over the rounds)
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import ledger_throughput as ledger  # noqa: E402
from flowledger.db.database import Database  # noqa: E402
from flowledger.db.urls import libpq_conninfo  # noqa: E402

COLUMNS_SQL = """
SELECT a.attname, format_type(a.atttypid, a.atttypmod)
FROM pg_attribute AS a
WHERE a.attrelid = 'workflow_jobs'::regclass AND a.attnum > 0 AND NOT a.attisdropped
  AND a.attname <> 'id'
ORDER BY a.attnum
"""


def reference_insert(conninfo: str) -> float:
    """Read the ledger's rows back, empty it, and time the plain insert of them."""
    with psycopg.connect(conninfo) as conn:
        columns = conn.execute(COLUMNS_SQL).fetchall()
        names = ", ".join(name for name, _ in columns)
        rows = conn.execute(f"SELECT {names} FROM workflow_jobs ORDER BY id").fetchall()
        conn.execute(f"TRUNCATE {', '.join(ledger.LEDGER_TABLES)} CASCADE")
        conn.commit()
        arrays: list[list[Any]] = [list(values) for values in zip(*rows, strict=True)]
        unnest = ", ".join(f"%s::{kind}[]" for _, kind in columns)
        sql = f"INSERT INTO workflow_jobs ({names}) SELECT * FROM unnest({unnest})"
        started = time.perf_counter()
        conn.execute(sql, [_adapted(a) for a in arrays], prepare=False)
        conn.commit()
        return time.perf_counter() - started


def _adapted(values: list[Any]) -> list[Any]:
    """JSON values as psycopg sends jsonb (dicts and lists wrapped)."""
    return [Jsonb(v) if isinstance(v, dict | list) else v for v in values]


async def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--db", required=True, help="a PostgreSQL URL (its ledger is emptied)")
    parser.add_argument("--jobs", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    db = Database(args.db)
    conninfo = libpq_conninfo(db.url)
    enqueue, reference = [], []
    try:
        for round_no in range(1, args.rounds + 1):
            await ledger.reset(db)
            rate = await ledger.bulk_enqueue(db, args.jobs)
            enqueue.append(args.jobs / rate)
            reference.append(reference_insert(conninfo))
            print(
                f"round {round_no}: ledger enqueue {enqueue[-1]:.3f} s, "
                f"plain unnest insert {reference[-1]:.3f} s",
                flush=True,
            )
    finally:
        await db.dispose()
    e, r = statistics.median(enqueue), statistics.median(reference)
    print(f"enqueue_s={e:.3f} reference_s={r:.3f} enqueue_ratio={e / r:.2f}")


if __name__ == "__main__":
    asyncio.run(main())
