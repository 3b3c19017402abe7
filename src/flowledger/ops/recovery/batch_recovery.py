"""Batch recovery of stuck instances (SPEC O-6): select the running
instances of a definition whose active token sits at a node with no engine
progress for at least N minutes (optionally only some explicit ids), then
for each one, **in its own transaction**, skip the task at that node and
advance along the node's outgoing edge
(:meth:`flowledger.engine.Engine.recover_node`). One instance failing never
affects the others: its transaction rolls back and its result says
``failed`` with the error. ``dry_run`` runs each step and rolls it back, so
the preview is what the recovery would do.

Selection is set-based: the candidates are one join of instances
(``ix_workflow_instances_definition``) and active tokens at the node
(``ix_workflow_tokens_instance_state``); their last engine progress (the
newest trace row) is one grouped query over ``ix_workflow_trace_instance``.
The run is a recorded batch operation of :mod:`flowledger.ops.batch`
(``batchId``; ``counts`` and each item's ``result`` in its vocabulary).
At most :data:`MAX_BATCH` instances per call (``truncated`` says more matched).

``rate`` (items per second, 1 to 200; none: at once) paces the run: the
k-th selected instance is recovered no earlier than k / rate seconds after
the first (:mod:`flowledger.ops.batch.pacing`). A run longer than
``max_seconds`` at that rate (the API's bound, 60 s: it runs inside the
request) is refused before anything is written (``rate_too_slow``). A dry
run is never paced: it answers the ``estimatedCompletion`` of a run at the
rate. The rate is kept in the batch's request document.

:func:`run_audited` is the recovery as an operator's action: one
``instance.batch_recover`` audit row for the batch (target the definition
key, the totals in its detail) and, unless a dry run, one
``instance.recover`` row per advanced instance, written after the
instances' own transactions (:func:`flowledger.access.audit.audited`)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.access.audit import AuditContext, AuditEntry, audited, write_audit
from flowledger.access.callers import Caller
from flowledger.db.engine_schema import workflow_instances as instances
from flowledger.db.engine_schema import workflow_tokens as tokens
from flowledger.db.engine_schema import workflow_trace as trace
from flowledger.engine import Engine
from flowledger.engine.force_jump import RecoveryOutcome, clean_reason
from flowledger.engine.interventions import EVENT as INTERVENTION
from flowledger.ops.batch import BatchRecorder, ItemOutcome, Selection, check_paced, done, skipped
from flowledger.ops.batch.pacing import MAX_PACED_SECONDS, estimate
from flowledger.states import InstanceStatus, TokenState

MAX_BATCH = 500
KIND = "instance.batch_recover"
log = logging.getLogger("flowledger.ops.recovery.batch_recovery")


@dataclass(frozen=True)
class RecoverySelection:
    definition_key: str
    node_key: str
    stuck_minutes: int
    instance_ids: tuple[int, ...] | None = None
    tenants: tuple[str, ...] | None = None


async def _last_progress(conn: AsyncConnection, ids: Sequence[int]) -> dict[int, datetime]:
    out: dict[int, datetime] = {}
    for offset in range(0, len(ids), 500):
        chunk = list(ids[offset : offset + 500])
        rows = await conn.execute(
            select(trace.c.instance_id, func.max(trace.c.created_at))
            # an operator's reminder or job skip is no progress of the engine (issue 31)
            .where(trace.c.instance_id.in_(chunk), trace.c.event != INTERVENTION)
            .group_by(trace.c.instance_id)
        )
        out.update({int(i): at for i, at in rows.all()})
    return out


async def select_stuck(
    conn: AsyncConnection, sel: RecoverySelection, *, now: datetime
) -> Selection[int]:
    """The ids to recover (at most :data:`MAX_BATCH`, ``truncated`` when
    more matched) and the explicit ids that do not qualify, skipped."""
    i = instances.c
    query = (
        select(i.id, i.tenant_id, i.status, i.definition_key, tokens.c.id.label("token_id"))
        .select_from(
            instances.outerjoin(
                tokens,
                (tokens.c.instance_id == i.id)
                & (tokens.c.node_key == sel.node_key)
                & (tokens.c.state == TokenState.ACTIVE),
            )
        )
        .order_by(i.id)
    )
    if sel.instance_ids is not None:
        query = query.where(i.id.in_(list(sel.instance_ids)))
    else:
        query = query.where(
            i.definition_key == sel.definition_key,
            i.status == InstanceStatus.RUNNING,
            tokens.c.id.is_not(None),
        )
    if sel.tenants is not None:
        query = query.where(i.tenant_id.in_(list(sel.tenants)))
    rows = (await conn.execute(query.limit((MAX_BATCH + 1) * 4))).all()
    seen: dict[int, Any] = {}
    for row in rows:
        if int(row.id) not in seen or row.token_id is not None:
            seen[int(row.id)] = row
    cutoff = now - timedelta(minutes=sel.stuck_minutes)
    progress = await _last_progress(conn, list(seen))
    chosen: list[int] = []
    skips: list[ItemOutcome] = []

    def skip(instance_id: int, reason: str) -> None:
        skips.append(skipped(instance_id, reason))

    for instance_id, row in seen.items():
        if row.definition_key != sel.definition_key:
            skip(instance_id, f"instance is of definition {row.definition_key!r}")
        elif row.status != InstanceStatus.RUNNING:
            skip(instance_id, f"instance is {row.status}")
        elif row.token_id is None:
            skip(instance_id, f"no active token at {sel.node_key!r}")
        elif progress.get(instance_id, now) > cutoff:
            skip(instance_id, f"engine progress within the last {sel.stuck_minutes} minutes")
        else:
            chosen.append(instance_id)
    if sel.instance_ids is not None:
        for missing in sorted(set(sel.instance_ids) - set(seen)):
            skip(missing, "instance not found")
    return Selection(chosen[:MAX_BATCH], len(chosen) > MAX_BATCH, skips)


def _advanced(outcome: RecoveryOutcome) -> dict[str, Any]:
    return {
        "skippedTasks": outcome.skipped_tasks,
        "canceledJobs": outcome.canceled_jobs,
        "tokenIds": outcome.token_ids,
        "toNodes": outcome.to_nodes,
    }


async def batch_recover(
    engine: Engine,
    sel: RecoverySelection,
    *,
    reason: str,
    actor: str,
    dry_run: bool = False,
    rate: int | None = None,
    max_seconds: float | None = MAX_PACED_SECONDS,
) -> dict[str, Any]:
    """Recover every selected instance, each in its own transaction, as one
    recorded batch operation (:mod:`flowledger.ops.batch`, kind
    ``instance.batch_recover``), at most ``rate`` per second; see the module
    docstring. Returns per-instance ``results`` and ``totals`` (the older
    words), the batch's ``batchId`` and ``counts`` (done / skipped /
    failed), its ``rate`` and ``estimatedCompletion``."""
    reason = clean_reason(reason)
    now = engine.clock.now()
    async with engine.db.read() as conn:
        selection = await select_stuck(conn, sel, now=now)
    if not dry_run:
        check_paced(selection.count, rate, max_seconds=max_seconds)

    async def recover(instance_id: int) -> ItemOutcome:
        outcome = await engine.recover_node(
            instance_id, node_key=sel.node_key, reason=reason, actor=actor, dry_run=dry_run
        )
        if isinstance(outcome, str):
            return skipped(instance_id, outcome)
        return done(instance_id, **_advanced(outcome))

    recorder = BatchRecorder(
        engine.db,
        KIND,
        actor=actor,
        clock=engine.clock.now,
        reason=reason,
        dry_run=dry_run,
        tenants=sel.tenants,
        request={
            "definitionKey": sel.definition_key,
            "nodeKey": sel.node_key,
            "stuckMinutes": sel.stuck_minutes,
            "instanceIds": None if sel.instance_ids is None else list(sel.instance_ids),
            "rate": rate,
        },
    )
    op = await recorder.run(selection, recover, key=int, rate=None if dry_run else rate)
    results = sorted(
        (o.doc("instanceId", "advanced") for o in op.outcomes), key=lambda r: int(r["instanceId"])
    )
    counts = op.counts
    return {
        "dryRun": dry_run,
        "definitionKey": sel.definition_key,
        "nodeKey": sel.node_key,
        "stuckMinutes": sel.stuck_minutes,
        "totals": {
            "advanced": counts.done,
            "skipped": counts.skipped,
            "failed": counts.failed,
            "selected": counts.total,
        },
        "truncated": selection.truncated,
        "results": results,
        "batchId": op.id,
        "counts": counts.public(),
        **estimate(now, selection.count, rate),
    }


async def run_audited(
    ctx: AuditContext,
    caller: Caller,
    engine: Engine,
    sel: RecoverySelection,
    *,
    reason: str,
    dry_run: bool = False,
    rate: int | None = None,
    max_seconds: float | None = MAX_PACED_SECONDS,
) -> dict[str, Any]:
    """:func:`batch_recover` by ``caller``, audited (see the module docstring)."""
    async with audited(
        ctx, caller, "instance.batch_recover", "definition", sel.definition_key, reason=reason
    ) as entry:
        result = await batch_recover(
            engine,
            sel,
            reason=reason,
            actor=caller.user_id,
            dry_run=dry_run,
            rate=rate,
            max_seconds=max_seconds,
        )
        entry.detail.update(
            nodeKey=sel.node_key,
            stuckMinutes=sel.stuck_minutes,
            dryRun=dry_run,
            totals=result["totals"],
        )
        if rate is not None:
            entry.detail.update(rate=rate)
        if dry_run:
            return result
        for item in result["results"]:
            if item["outcome"] != "advanced":
                continue
            row = AuditEntry.by(
                caller, "instance.recover", "instance", item["instanceId"], reason=reason
            )
            row.detail.update(
                nodeKey=sel.node_key,
                skippedTasks=[t["taskId"] for t in item["skippedTasks"]],
                canceledJobs=[j["jobId"] for j in item["canceledJobs"]],
            )
            await write_audit(ctx, row, "ok")
    return result
