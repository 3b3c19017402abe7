"""Data-retention runs and previews (SPEC O-20): an operator action (``run``)
and its dry count (``preview``), both over the policies of
:mod:`flowledger.ops.retention.policies` with the steps of
:mod:`flowledger.ops.retention.purge`.

A run:

1. takes the ``data-retention-run`` lease (``system_leader_leases``), so two
   runs never overlap — a second one is refused with 409
   ``retention_running`` (two operators clicking at once, or an operator and
   the daily task); the lease is renewed in every batch and released at the
   end, and expires on its own if the process dies;
2. records the run (``workflow_retention_runs``, status ``running``) and
   closes any run still marked running as ``failed`` (interrupted: its
   process died, its lease expired);
3. for every enabled policy and each of its steps, removes one batch of at
   most ``batch_size`` rows per transaction until a batch comes back short,
   yielding to the event loop between batches: no lock is ever held longer
   than one batch and no statement rewrites a table;
4. records one ``workflow_retention_run_items`` row per policy (cut-off,
   rows per table, batches, duration, the history partitions dropped whole
   — ``partitionsDropped``, issue 34 item 2 — or why it was skipped) and closes the
   run (``succeeded`` / ``failed`` with the error).

The cut-off of a policy is ``now - keepDays``; ``now`` is fixed once per run.

A run is also a recorded batch operation of :mod:`flowledger.ops.batch`
(kind ``retention.run``, id ``retention-<run id>``): one item per policy,
``done``, ``skipped`` (disabled) or ``failed``, its progress written after
each policy; the run's document adds ``batchId`` and ``counts``.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import desc, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db.database import Database
from flowledger.db.retention_schema import workflow_retention_run_items as run_items
from flowledger.db.retention_schema import workflow_retention_runs as runs
from flowledger.errors import ConflictError
from flowledger.ledger.driver import LedgerDriver, ledger_driver
from flowledger.ops import batch as batch_ops
from flowledger.ops.batch import ItemOutcome, done, failed_from, skipped
from flowledger.ops.batch.record import BatchRecorder, counts_of
from flowledger.ops.retention.policies import Policy, check_name, load_policies
from flowledger.ops.retention.purge import PARTITIONS_DROPPED, Counts, policy_steps

BATCH_KIND = "retention.run"
RUN_LEASE = "data-retention-run"
RUN_LEASE_TTL = timedelta(minutes=10)
BATCH_SIZE = 1000


class RetentionRunning(ConflictError):
    code = "retention_running"


class LeaseLost(ConflictError):
    code = "retention_lease_lost"


@dataclass
class PolicyResult:
    policy: str
    enabled: bool
    keep_days: int
    cutoff: datetime
    tables: Counts = field(default_factory=dict)
    batches: int = 0
    duration_ms: int = 0
    skipped: str | None = None
    partitions_dropped: int = 0

    @property
    def rows(self) -> int:
        return sum(self.tables.values())

    def public(self) -> dict[str, Any]:
        return {
            "policy": self.policy,
            "enabled": self.enabled,
            "keepDays": self.keep_days,
            "cutoff": self.cutoff,
            "rows": self.rows,
            "tables": dict(self.tables),
            "batches": self.batches,
            "durationMs": self.duration_ms,
            "skipped": self.skipped,
            "partitionsDropped": self.partitions_dropped,
        }


def _select(policies: list[Policy], names: Sequence[str] | None) -> list[Policy]:
    if not names:
        return policies
    for i, name in enumerate(names):
        check_name(name, field=f"policies[{i}]")
    wanted = set(names)
    return [p for p in policies if p.name in wanted]


def _add(total: Counts, counts: Counts) -> None:
    for table, n in counts.items():
        total[table] = total.get(table, 0) + n


async def preview(
    db: Database, *, now: datetime, policies: Sequence[str] | None = None
) -> dict[str, Any]:
    """What a run at ``now`` would remove, per policy and table (no change)."""
    ledger = ledger_driver(db)
    async with db.read() as conn:
        chosen = _select(await load_policies(conn), policies)
        items = []
        for policy in chosen:
            result = PolicyResult(
                policy.name,
                policy.enabled,
                policy.keep_days,
                now - timedelta(days=policy.keep_days),
            )
            steps, skipped = await policy_steps(conn, policy.name)
            if not policy.enabled:
                result.skipped = "disabled"
            elif skipped is not None:
                result.skipped = skipped
            else:
                for step in steps:
                    _add(result.tables, await step.count(conn, ledger, result.cutoff))
            items.append(result.public())
    return {"now": now, "rows": sum(i["rows"] for i in items), "items": items}


async def _purge_policy(
    db: Database,
    result: PolicyResult,
    holder: str,
    clock: Callable[[], datetime],
    batch_size: int,
) -> None:
    ledger = ledger_driver(db)
    async with db.read() as conn:
        steps, skipped = await policy_steps(conn, result.policy)
    if skipped is not None:
        result.skipped = skipped
        return
    for step in steps:
        after = step.start
        while after is not None:
            async with db.begin() as conn:
                await _renew(conn, ledger, holder, clock())
                after, counts = await step.batch(conn, ledger, result.cutoff, after, batch_size)
            dropped = counts.pop(PARTITIONS_DROPPED, 0)
            result.partitions_dropped += dropped
            _add(result.tables, counts)
            if dropped or any(counts.values()) or step.counts_empty_batches:
                result.batches += 1
            await asyncio.sleep(0)  # let other writers in between batches


async def _renew(conn: AsyncConnection, ledger: LedgerDriver, holder: str, now: datetime) -> None:
    if not await ledger.leader_acquire(conn, RUN_LEASE, holder, now=now, ttl=RUN_LEASE_TTL):
        raise LeaseLost("another retention run took over the lease")


async def run_retention(
    db: Database,
    *,
    now: datetime,
    trigger: str,
    actor: str,
    policies: Sequence[str] | None = None,
    batch_size: int = BATCH_SIZE,
) -> dict[str, Any]:
    """One retention run at ``now`` (see the module docstring); returns the
    recorded run. 409 ``retention_running`` while another run is going."""
    holder = f"{actor}:{uuid.uuid4().hex[:12]}"
    ledger = ledger_driver(db)
    async with db.begin() as conn:
        chosen = _select(await load_policies(conn), policies)
        if not await ledger.leader_acquire(conn, RUN_LEASE, holder, now=now, ttl=RUN_LEASE_TTL):
            raise RetentionRunning("a retention run is already in progress")
        # holding the lease, no other run is alive: a run still marked
        # running was interrupted (its process died) and is closed as failed
        await conn.execute(
            update(runs)
            .where(runs.c.status == "running")
            .values(status="failed", error="interrupted (the run's process stopped)")
        )
        run_id = (
            await conn.execute(
                runs.insert()
                .values(
                    trigger=trigger, actor=actor, status="running", started_at=now, rows_removed=0
                )
                .returning(runs.c.id)
            )
        ).scalar_one()
    started = time.monotonic()

    def elapsed_clock() -> datetime:
        """``now`` moved on by the run's elapsed time (lease renewals)."""
        return now + timedelta(seconds=time.monotonic() - started)

    total = 0
    error: str | None = None
    recorder = BatchRecorder(
        db,
        BATCH_KIND,
        actor=actor,
        clock=elapsed_clock,
        request={"trigger": trigger, "policies": [p.name for p in chosen]},
        batch_id=batch_id_of(run_id),
    )
    await recorder.start(len(chosen))
    outcomes: list[ItemOutcome] = []
    try:
        for policy in chosen:
            result = PolicyResult(
                policy.name,
                policy.enabled,
                policy.keep_days,
                now - timedelta(days=policy.keep_days),
            )
            policy_started = time.monotonic()
            try:
                if policy.enabled:
                    await _purge_policy(db, result, holder, elapsed_clock, batch_size)
                else:
                    result.skipped = "disabled"
            except BaseException as exc:
                outcomes.append(failed_from(policy.name, exc))
                raise
            else:
                outcomes.append(
                    done(policy.name)
                    if result.skipped is None
                    else skipped(policy.name, result.skipped, result.skipped)
                )
            finally:
                # recorded even when the policy failed half-way: its batches
                # that committed are gone and must be on record
                result.duration_ms = round((time.monotonic() - policy_started) * 1000)
                total += result.rows
                await _record_item(db, run_id, result)
                await recorder.progress(outcomes)
    except BaseException as exc:  # a cancelled run (shutdown) is not a success either
        error = f"{type(exc).__name__}: {exc}"
        await recorder.fail(outcomes, exc)
        raise
    finally:
        duration = round((time.monotonic() - started) * 1000)
        async with db.begin() as conn:
            await conn.execute(
                update(runs)
                .where(runs.c.id == run_id)
                .values(
                    status="failed" if error else "succeeded",
                    finished_at=now + timedelta(milliseconds=duration),
                    duration_ms=duration,
                    rows_removed=total,
                    error=error,
                )
            )
            await ledger.leader_release(conn, RUN_LEASE, holder)
    await recorder.finish(outcomes)
    return await get_run(db, run_id)


async def _record_item(db: Database, run_id: int, result: PolicyResult) -> None:
    async with db.begin() as conn:
        await conn.execute(
            run_items.insert().values(
                run_id=run_id,
                policy=result.policy,
                keep_days=result.keep_days,
                cutoff=result.cutoff,
                rows_removed=result.rows,
                batches=result.batches,
                duration_ms=result.duration_ms,
                skipped=result.skipped,
                detail={
                    "tables": result.tables,
                    "enabled": result.enabled,
                    "partitionsDropped": result.partitions_dropped,
                },
            )
        )


def batch_id_of(run_id: int) -> str:
    """The id of a run's recorded batch operation (``ops/batch``)."""
    return f"retention-{run_id}"


def _run_public(row: Any, items: list[Any], counts: dict[str, batch_ops.Counts]) -> dict[str, Any]:
    recorded = counts.get(batch_id_of(row.id))

    def dropped(item: Any) -> int:
        return int((item.detail or {}).get("partitionsDropped", 0))

    return {
        "id": row.id,
        # the recorded batch operation (none for a run from before it)
        "batchId": None if recorded is None else batch_id_of(row.id),
        "counts": None if recorded is None else recorded.public(),
        "trigger": row.trigger,
        "actor": row.actor,
        "status": row.status,
        "startedAt": row.started_at,
        "finishedAt": row.finished_at,
        "durationMs": row.duration_ms,
        "rowsRemoved": row.rows_removed,
        "partitionsDropped": sum(dropped(i) for i in items),
        "error": row.error,
        "items": [
            {
                "policy": i.policy,
                "enabled": bool((i.detail or {}).get("enabled", i.skipped != "disabled")),
                "keepDays": i.keep_days,
                "cutoff": i.cutoff,
                "rows": i.rows_removed,
                "tables": (i.detail or {}).get("tables", {}),
                "batches": i.batches,
                "durationMs": i.duration_ms,
                "skipped": i.skipped,
                "partitionsDropped": dropped(i),
            }
            for i in items
        ],
    }


async def get_run(db: Database, run_id: int) -> dict[str, Any]:
    async with db.read() as conn:
        row = (await conn.execute(select(runs).where(runs.c.id == run_id))).one()
        items = (
            await conn.execute(
                select(run_items).where(run_items.c.run_id == run_id).order_by(run_items.c.id)
            )
        ).all()
        counts = await counts_of(conn, [batch_id_of(run_id)])
    return _run_public(row, list(items), counts)


async def list_runs(db: Database, *, limit: int = 20) -> list[dict[str, Any]]:
    """The newest runs first, each with its per-policy items (two queries)."""
    async with db.read() as conn:
        rows = (await conn.execute(select(runs).order_by(desc(runs.c.id)).limit(limit))).all()
        ids = [r.id for r in rows]
        items = (
            (
                await conn.execute(
                    select(run_items).where(run_items.c.run_id.in_(ids)).order_by(run_items.c.id)
                )
            ).all()
            if ids
            else []
        )
        counts = await counts_of(conn, [batch_id_of(i) for i in ids])
    by_run: dict[int, list[Any]] = {}
    for item in items:
        by_run.setdefault(item.run_id, []).append(item)
    return [_run_public(r, by_run.get(r.id, []), counts) for r in rows]


async def last_scheduled_start(conn: AsyncConnection) -> datetime | None:
    """When the newest scheduled run started (``…_runs_trigger`` index)."""
    stmt = select(runs.c.started_at).where(runs.c.trigger == "scheduled")
    stmt = stmt.order_by(desc(runs.c.started_at)).limit(1)
    value = (await conn.execute(stmt)).scalar_one_or_none()
    return value
