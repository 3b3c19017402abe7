"""Suspend or resume every running (suspended) instance of a definition at
once (issue 31 item 3), optionally only one version, only the instances
with an active token at one node, or only some explicit ids.

Two calls, as batch recovery (:mod:`flowledger.ops.recovery.batch_recovery`):

- :func:`preview_scope` (the dry run) selects exactly what the run would act
  on and answers its ``count`` and the first :data:`SAMPLE_SIZE` of them, and
  how many instances of the same selection are skipped because of their
  status (``skippedByStatus``: e.g. already suspended, ended);
- :func:`run_scope` selects the same way, then suspends (resumes) each
  instance through the single-instance action
  (:meth:`flowledger.engine.Engine.suspend` / ``resume``), **each in its own
  transaction**: one failing never affects the others. Each item's outcome
  is ``suspended`` / ``resumed``, ``skipped`` with the reason (its status
  changed since the selection, or an explicit id that does not qualify), or
  ``failed`` with the error.

Selection is set-based over ``ix_workflow_instances_definition``
(definition_key, status) joined, with a node, to the active tokens there
(``ix_workflow_tokens_instance_state``). At most :data:`MAX_BATCH` instances
per call; ``truncated`` says more matched (run again for the rest).

:func:`run_audited` is the run as an operator's action (the API's and the
CLI's): one ``definition.suspend_all`` / ``definition.resume_all`` audit row
for the batch (target the definition key, totals in its detail) and one
``instance.suspend`` / ``instance.resume`` row per instance acted on, each
written after the instance's own transaction commits
(:func:`flowledger.access.audit.audited`).

Both go through :mod:`flowledger.ops.batch`: the preview is the
selection's dry run, the run a recorded batch operation (``batchId``,
``counts``, each item's ``result``).

``rate`` (items per second, 1 to 200; none: at once) paces the run: the
k-th selected instance is acted on no earlier than k / rate seconds after
the first (:mod:`flowledger.ops.batch.pacing`). A run longer than
``max_seconds`` at that rate (the API's bound, 60 s: it runs inside the
request) is refused before anything is written (``rate_too_slow``). The
preview answers the ``estimatedCompletion`` of a run at the rate; the rate
is kept in the batch's request document."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal

from sqlalchemy import exists, func, select
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.access.audit import AuditContext, AuditEntry, audited, write_audit
from flowledger.access.callers import Caller
from flowledger.db.engine_schema import workflow_instances as instances
from flowledger.db.engine_schema import workflow_tokens as tokens
from flowledger.engine import Engine
from flowledger.engine.force_jump import clean_reason
from flowledger.errors import FlowledgerError
from flowledger.ops.batch import BatchRecorder, ItemOutcome, Selection, check_paced, done, skipped
from flowledger.ops.batch.pacing import MAX_PACED_SECONDS, estimate
from flowledger.states import InstanceStatus, TokenState

MAX_BATCH = 500
SAMPLE_SIZE = 20
Action = Literal["suspend", "resume"]
# the status an instance must have for the action, and the outcome word
_NEEDS: dict[str, InstanceStatus] = {
    "suspend": InstanceStatus.RUNNING,
    "resume": InstanceStatus.SUSPENDED,
}
_DONE = {"suspend": "suspended", "resume": "resumed"}


@dataclass(frozen=True)
class ScopeSelection:
    definition_key: str
    version: int | None = None
    node_key: str | None = None
    instance_ids: tuple[int, ...] | None = None
    tenants: tuple[str, ...] | None = None


def _where(sel: ScopeSelection) -> list[Any]:
    i = instances.c
    where: list[Any] = [i.definition_key == sel.definition_key]
    if sel.version is not None:
        where.append(i.definition_version == sel.version)
    if sel.node_key is not None:
        where.append(
            exists().where(
                tokens.c.instance_id == i.id,
                tokens.c.node_key == sel.node_key,
                tokens.c.state == TokenState.ACTIVE,
            )
        )
    if sel.instance_ids is not None:
        where.append(i.id.in_(list(sel.instance_ids)))
    if sel.tenants is not None:
        where.append(i.tenant_id.in_(list(sel.tenants)))
    return where


async def _select(
    conn: AsyncConnection, sel: ScopeSelection, action: Action
) -> tuple[list[int], bool]:
    rows = await conn.execute(
        select(instances.c.id)
        .where(*_where(sel), instances.c.status == _NEEDS[action])
        .order_by(instances.c.id)
        .limit(MAX_BATCH + 1)
    )
    ids = [int(r[0]) for r in rows]
    return ids[:MAX_BATCH], len(ids) > MAX_BATCH


async def _skipped_by_status(
    conn: AsyncConnection, sel: ScopeSelection, action: Action
) -> dict[str, int]:
    rows = await conn.execute(
        select(instances.c.status, func.count())
        .where(*_where(sel), instances.c.status != _NEEDS[action])
        .group_by(instances.c.status)
    )
    return {str(status): int(n) for status, n in rows}


async def _explicit_skips(
    conn: AsyncConnection, sel: ScopeSelection, action: Action, chosen: list[int]
) -> list[ItemOutcome]:
    """The explicit ids that do not qualify, each skipped with its reason."""
    if sel.instance_ids is None:
        return []
    i = instances.c
    query = select(i.id, i.status, i.definition_key, i.definition_version).where(
        i.id.in_(list(sel.instance_ids))
    )
    if sel.tenants is not None:
        query = query.where(i.tenant_id.in_(list(sel.tenants)))
    found = {int(r.id): r for r in (await conn.execute(query)).all()}
    out: list[ItemOutcome] = []
    for instance_id in sorted(set(sel.instance_ids) - set(chosen)):
        row = found.get(instance_id)
        if row is None:
            reason = "instance not found"
        elif row.definition_key != sel.definition_key:
            reason = f"instance is of definition {row.definition_key!r}"
        elif sel.version is not None and row.definition_version != sel.version:
            reason = f"instance is of version {row.definition_version}"
        elif row.status != _NEEDS[action]:
            reason = f"instance is {row.status}"
        else:
            reason = f"no active token at {sel.node_key!r}"
        out.append(skipped(instance_id, reason))
    return out


async def _selection(
    conn: AsyncConnection, sel: ScopeSelection, action: Action
) -> tuple[Selection[int], dict[str, int]]:
    """What the run takes (with the explicit ids it skips) and the
    instances of the selection skipped by their status."""
    ids, truncated = await _select(conn, sel, action)
    explicit = await _explicit_skips(conn, sel, action, ids)
    return Selection(ids, truncated, explicit), await _skipped_by_status(conn, sel, action)


def _echo(sel: ScopeSelection, action: Action) -> dict[str, Any]:
    return {
        "action": action,
        "definitionKey": sel.definition_key,
        "version": sel.version,
        "nodeKey": sel.node_key,
    }


async def preview_scope(
    engine: Engine, sel: ScopeSelection, action: Action, *, rate: int | None = None
) -> dict[str, Any]:
    """The dry run: what :func:`run_scope` would act on, counted, with a
    sample, and how long a run at ``rate`` would take."""
    now = engine.clock.now()
    async with engine.db.read() as conn:
        selection, by_status = await _selection(conn, sel, action)
    return {
        **_echo(sel, action),
        "dryRun": True,
        **selection.dry_run(SAMPLE_SIZE),
        "skippedByStatus": by_status,
        "skipped": [o.doc("instanceId") for o in selection.skipped],
        **estimate(now, selection.count, rate),
    }


async def run_scope(
    engine: Engine,
    sel: ScopeSelection,
    action: Action,
    *,
    reason: str,
    actor: str,
    rate: int | None = None,
    max_seconds: float | None = MAX_PACED_SECONDS,
) -> dict[str, Any]:
    """Suspend (resume) every selected instance, each in its own transaction,
    at most ``rate`` per second, as one recorded batch operation (kind
    ``definition.suspend_all`` / ``definition.resume_all``)."""
    reason = clean_reason(reason)
    now = engine.clock.now()
    async with engine.db.read() as conn:
        selection, by_status = await _selection(conn, sel, action)
    check_paced(selection.count, rate, max_seconds=max_seconds)
    call: Callable[[int], Awaitable[list[int]]]
    if action == "suspend":

        def call(i: int) -> Awaitable[list[int]]:
            return engine.suspend(i, actor=actor, reason=reason)

    else:

        def call(i: int) -> Awaitable[list[int]]:
            return engine.resume(i, actor=actor)

    async def act(instance_id: int) -> ItemOutcome:
        try:
            jobs = await call(instance_id)
        except FlowledgerError as exc:
            status = exc.details.get("status")
            if exc.field == "status" and status is not None:
                return skipped(instance_id, f"instance is {status}")
            raise
        return done(instance_id, jobIds=jobs)

    recorder = BatchRecorder(
        engine.db,
        f"definition.{action}_all",
        actor=actor,
        clock=engine.clock.now,
        reason=reason,
        tenants=sel.tenants,
        request={
            **_echo(sel, action),
            "instanceIds": None if sel.instance_ids is None else list(sel.instance_ids),
            "rate": rate,
        },
    )
    op = await recorder.run(selection, act, key=int, rate=rate)
    counts = op.counts
    results = sorted(
        (o.doc("instanceId", _DONE[action]) for o in op.outcomes),
        key=lambda r: int(r["instanceId"]),
    )
    return {
        **_echo(sel, action),
        "dryRun": False,
        "totals": {
            _DONE[action]: counts.done,
            "skipped": counts.skipped,
            "failed": counts.failed,
            "selected": selection.count,
        },
        "truncated": selection.truncated,
        "skippedByStatus": by_status,
        "results": results,
        "batchId": op.id,
        "counts": counts.public(),
        **estimate(now, selection.count, rate),
    }


async def run_audited(
    ctx: AuditContext,
    caller: Caller,
    engine: Engine,
    sel: ScopeSelection,
    action: Action,
    *,
    reason: str | None,
    rate: int | None = None,
    max_seconds: float | None = MAX_PACED_SECONDS,
) -> dict[str, Any]:
    """:func:`run_scope` by ``caller``, audited (see the module docstring)."""
    batch = f"definition.{action}_all"
    async with audited(ctx, caller, batch, "definition", sel.definition_key, reason=reason) as e:
        doc = await run_scope(
            engine,
            sel,
            action,
            reason=reason or "(resume)",
            actor=caller.user_id,
            rate=rate,
            max_seconds=max_seconds,
        )
        e.detail.update(version=sel.version, nodeKey=sel.node_key, totals=doc["totals"])
        if rate is not None:
            e.detail.update(rate=rate)
        jobs_key = "pausedJobs" if action == "suspend" else "resumedJobs"
        for item in doc["results"]:
            if item["outcome"] != _DONE[action]:
                continue
            entry = AuditEntry.by(
                caller, f"instance.{action}", "instance", item["instanceId"], reason=reason
            )
            entry.detail.update({jobs_key: item["jobIds"], "batch": batch})
            await write_audit(ctx, entry, "ok")
    return doc
