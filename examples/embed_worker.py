"""Embedding flowledger's job ledger and worker in your own program
(docs/embedding.md): a user-defined pool ``emails`` with one slot, a handler
for one job type in it, a few jobs enqueued, and a worker that runs them —
beside the two built-in pools — until they are done.

    python examples/embed_worker.py sqlite:///./embedded.db
    python examples/embed_worker.py postgresql://postgres@127.0.0.1:5432/mydb

Prints one line per job the handler ran, then ``5 jobs succeeded``.
"""

from __future__ import annotations

import asyncio
import sys

from flowledger.db.migrate import upgrade
from flowledger.runtime import build_runtime
from flowledger.settings import Settings
from flowledger.worker import JobContext, JobSpec

JOBS = 5


async def main(database_url: str) -> None:
    # The settings declare the user pool and its slots (as FLOWLEDGER_POOLS
    # would); the runtime declares it before any handler names it.
    settings = Settings(database_url=database_url, pools="emails=1", poll_interval_s=1.0)
    runtime = build_runtime(settings=settings)
    await upgrade(runtime.db)  # create or upgrade the schema

    sent: list[str] = []
    all_sent = asyncio.Event()

    async def send_welcome_email(ctx: JobContext) -> dict[str, str]:
        address = ctx.payload["to"]
        print(f"job {ctx.job.id}: welcome e-mail to {address} (pool {ctx.job.pool})", flush=True)
        sent.append(address)
        if len(sent) == JOBS:
            all_sent.set()
        return {"sent_to": address}

    # A job type named with its pool and budget, bound to its handler.
    runtime.handlers.register(
        "send_welcome_email", send_welcome_email, pool="emails", max_attempts=3
    )

    # Enqueue in a transaction of the runtime's own; inside a transaction of
    # yours, call runtime.enqueue_in(conn, *specs) with its connection.
    results = await runtime.enqueue(
        *(JobSpec("send_welcome_email", {"to": f"user{i}@example.com"}) for i in range(JOBS))
    )

    # The worker runs the built-in pools and `emails`; stop it when done.
    worker = runtime.worker()
    stop = asyncio.Event()
    run = asyncio.create_task(worker.run(stop))
    await asyncio.wait_for(all_sent.wait(), timeout=60)
    stop.set()
    await run  # graceful: the settlements are written before it returns
    await runtime.db.dispose()
    print(f"{len(results)} jobs succeeded", flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else "sqlite:///./embedded.db"))
