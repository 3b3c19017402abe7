"""What one PostgreSQL round trip costs on this machine (issue 15 item 1).

    python bench/pg_round_trip.py --db postgresql://… [--n 5000]

The engine is CPU-bound here: an instance's ~40 round trips (statements,
plus each transaction's BEGIN and COMMIT) cost CPU in three places: this
client (psycopg's async protocol on uvloop, as the worker runs it), the
kernel's loopback socket and wake-ups, and the server. This prints the cost
of one round trip with nothing else around it, so an engine figure can be
read as "round trips times cost" (docs/performance.md, "Round trips"):

1. ``select``: one prepared ``SELECT $1`` per round trip, autocommit;
2. ``tx``: a transaction of one primary-key UPDATE — psycopg's implicit
   BEGIN, the UPDATE, COMMIT: three round trips;
3. ``autocommit``: the same UPDATE alone in autocommit — one round trip;
4. ``pipeline``: the ``tx`` transaction with BEGIN and the UPDATE sent in
   one psycopg pipeline (what a pipelined BEGIN would save or cost).

Per kind: wall µs and this process's CPU µs per operation, and, when the
server runs on this host and /proc shows its processes (the postmaster's
children included), the server's CPU µs per operation. Raw psycopg, no
SQLAlchemy: the floor under the engine's own statements. Not part of the
test run.
"""

from __future__ import annotations

import argparse
import os
import resource
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import psycopg
import uvloop

_TICK = os.sysconf("SC_CLK_TCK")


def server_cpu_s() -> float | None:
    """CPU seconds of every process named postgres* on this host, with the
    postmaster's reaped children; None when /proc shows none."""
    total = 0
    seen = False
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if not (entry / "comm").read_text().startswith("postgres"):
                continue
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        seen = True
        utime, stime, cutime, cstime = map(int, fields[11:15])
        total += utime + stime + cutime + cstime  # cutime: only a parent has it
    return total / _TICK if seen else None


def client_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def measure(name: str, n: int, op: Callable[[int], Awaitable[None]]) -> None:
    for i in range(min(n, 200)):  # warm up: psycopg prepares after 5 runs
        await op(i)
    server_before, client_before, wall_before = server_cpu_s(), client_cpu_s(), time.perf_counter()
    for i in range(n):
        await op(i)
    wall = time.perf_counter() - wall_before
    client = client_cpu_s() - client_before
    server_after = server_cpu_s()
    server = (
        f"{(server_after - server_before) / n * 1e6:.0f}"
        if server_before is not None and server_after is not None
        else "n/a"
    )
    print(
        f"{name}: wall_us={wall / n * 1e6:.0f} client_cpu_us={client / n * 1e6:.0f} "
        f"server_cpu_us={server}",
        flush=True,
    )


async def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--db", required=True, help="a PostgreSQL URL (a temporary table is used)")
    parser.add_argument("--n", type=int, default=5000)
    args = parser.parse_args()
    url = args.db.replace("postgresql+psycopg://", "postgresql://")
    tx = await psycopg.AsyncConnection.connect(url)
    auto = await psycopg.AsyncConnection.connect(url, autocommit=True)
    await auto.execute(
        "CREATE TABLE IF NOT EXISTS flowledger_round_trip (id int PRIMARY KEY, v bigint NOT NULL)"
    )
    await auto.execute(
        "INSERT INTO flowledger_round_trip SELECT g, 0 FROM generate_series(1, 64) g "
        "ON CONFLICT DO NOTHING"
    )
    update = "UPDATE flowledger_round_trip SET v = v + 1 WHERE id = %s"

    async def select(i: int) -> None:
        await (await auto.execute("SELECT %s::int", (i,))).fetchall()

    async def in_tx(i: int) -> None:
        await tx.execute(update, (i % 64 + 1,))
        await tx.commit()

    async def autocommit(i: int) -> None:
        await auto.execute(update, (i % 64 + 1,))

    async def pipelined(i: int) -> None:
        async with tx.pipeline():
            await tx.execute(update, (i % 64 + 1,))
        await tx.commit()

    try:
        await measure("select (1 round trip)", args.n, select)
        await measure("tx (BEGIN + UPDATE + COMMIT: 3 round trips)", args.n, in_tx)
        await measure("autocommit (UPDATE: 1 round trip)", args.n, autocommit)
        await measure("pipeline (BEGIN and UPDATE pipelined + COMMIT)", args.n, pipelined)
    finally:
        await auto.execute("DROP TABLE IF EXISTS flowledger_round_trip")
        await tx.close()
        await auto.close()


if __name__ == "__main__":
    uvloop.run(main())
