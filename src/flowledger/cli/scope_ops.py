"""Pause and suspend by scope from the command line (issue 31 item 3):

- ``flowledger pause-jobs --pool P | --type T --reason R`` — no worker
  claims the scope's pending jobs until ``flowledger resume-jobs --pool P |
  --type T`` (which wakes the scope's workers); ``flowledger paused-jobs``
  lists the paused scopes with who, why and since;
- ``flowledger instances suspend-all KEY [--version V] [--node N] --reason R
  [--rate R] [--dry-run]`` / ``resume-all`` — every running (suspended)
  instance of the definition, each in its own transaction, at most
  ``--rate`` per second (no bound on how long that takes, unlike the API's
  60 s); ``--dry-run`` prints the count and a sample of what the run would
  take, and how long it would take at ``--rate``.

Each run writes the same ``operation_audit`` rows as the API
(``job_scope.pause`` / ``job_scope.resume``; ``definition.suspend_all`` /
``definition.resume_all`` and one ``instance.suspend`` / ``instance.resume``
row per instance), as the operator ``--actor`` (default ``cli``). A pool or
job type this runtime does not know, or a blank reason, is exit code 2
naming the field. The mechanics are :mod:`flowledger.ledger.pauses` and
:mod:`flowledger.ops.interventions.scope_suspend`."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.table import Table

from flowledger.cli import jobs_support as js
from flowledger.cli.common import console, out, runtime_session
from flowledger.cli.runtime import run_async
from flowledger.engine.force_jump import clean_reason
from flowledger.errors import FlowledgerError
from flowledger.ledger.pauses import Pause, Scope, pauses_list
from flowledger.ops.interventions.scope_suspend import (
    Action,
    ScopeSelection,
    preview_scope,
    run_audited,
)
from flowledger.ops.jobs import pauses

PoolOpt = Annotated[str | None, typer.Option("--pool", help="A pool (ledger, outbound, …).")]
TypeOpt = Annotated[str | None, typer.Option("--type", "-t", help="A job type.")]
VersionOpt = Annotated[int | None, typer.Option("--version", help="Only this version.", min=1)]
NodeOpt = Annotated[
    str | None, typer.Option("--node", help="Only instances with an active token at this node.")
]
DryRunOpt = Annotated[bool, typer.Option("--dry-run", help="Only count what a run would take.")]


def _run(as_json: bool, main: Any) -> None:
    """Run ``main(runtime)``; a flowledger error is exit code 2 naming its field."""

    async def wrapped() -> None:
        async with runtime_session() as runtime:
            await main(runtime)

    try:
        run_async(wrapped)
    except FlowledgerError as exc:
        if as_json:
            js.print_json({"code": exc.code, "message": exc.message, "field": exc.field})
        where = f" (field {exc.field})" if exc.field else ""
        console.print(f"[red]error[/red] ({exc.code}){where}: {exc.message}")
        raise typer.Exit(2) from exc


def _scope(pool: str | None, job_type: str | None) -> tuple[Scope, str]:
    if (pool is None) == (job_type is None):
        raise FlowledgerError("give exactly one of --pool and --type", field="pool")
    scope: Scope = "pool" if pool is not None else "job_type"
    return scope, pool if pool is not None else str(job_type)


def _field(scope: Scope) -> str:
    """The option naming a scope's value in a refusal."""
    return "pool" if scope == "pool" else "type"


def _pause_json(p: Pause) -> dict[str, Any]:
    return {
        "scope": p.scope,
        "value": p.value,
        "pausedBy": p.paused_by,
        "reason": p.reason,
        "since": p.since,
    }


def _pauses_table(pauses: list[Pause]) -> Table:
    table = Table("scope", "value", "paused by", "since", "reason", title="paused")
    for p in pauses:
        table.add_row(p.scope, p.value, p.paused_by, js.text(p.since), js.text(p.reason, 70))
    return table


def pause_jobs(
    pool: PoolOpt = None,
    job_type: TypeOpt = None,
    reason: js.ReasonOpt = None,
    actor: js.ActorOpt = "cli",
    as_json: js.JsonOpt = False,
) -> None:
    """Pause a pool or a job type: its pending jobs stay pending, unclaimed."""

    async def main(runtime: Any) -> None:
        scope, value = _scope(pool, job_type)
        why = clean_reason(reason)
        ctx, caller = js.operator(runtime.engine, actor)
        p = await pauses.pause(  # refused: audited as failed, as the API
            ctx, caller, scope, value, reason=why, known=runtime.job_types, field=_field(scope)
        )
        if as_json:
            js.print_json(_pause_json(p))
        else:
            out.print(f"paused {scope} {value} (by {actor}: {why})")

    _run(as_json, main)


def resume_jobs(
    pool: PoolOpt = None,
    job_type: TypeOpt = None,
    reason: js.ReasonOpt = None,
    actor: js.ActorOpt = "cli",
    as_json: js.JsonOpt = False,
) -> None:
    """Resume a paused pool or job type and wake its workers."""

    async def main(runtime: Any) -> None:
        scope, value = _scope(pool, job_type)
        ctx, caller = js.operator(runtime.engine, actor)
        p = await pauses.resume(
            ctx, caller, scope, value, reason=reason, known=runtime.job_types, field=_field(scope)
        )
        if as_json:
            js.print_json(_pause_json(p))
        else:
            out.print(f"resumed {scope} {value} (paused by {p.paused_by} since {js.text(p.since)})")

    _run(as_json, main)


def paused_jobs(as_json: js.JsonOpt = False) -> None:
    """List the paused pools and job types: who paused each, why, since."""

    async def main(runtime: Any) -> None:
        async with runtime.db.read() as conn:
            pauses = await pauses_list(conn)
        if as_json:
            js.print_json({"items": [_pause_json(p) for p in pauses]})
        elif pauses:
            out.print(_pauses_table(pauses))
        else:
            out.print("nothing is paused")

    _run(as_json, main)


def _results_table(doc: dict[str, Any]) -> Table:
    table = Table("instance", "outcome", "why", title=f"{doc['action']} {doc['definitionKey']}")
    for r in doc["results"]:
        why = r.get("reason") or (r.get("error") or {}).get("message")
        table.add_row(str(r["instanceId"]), r["outcome"], js.text(why, 70))
    return table


def _definition_scope(action: Action) -> Any:
    def command(
        definition_key: Annotated[str, typer.Argument(help="The definition key.")],
        version: VersionOpt = None,
        node: NodeOpt = None,
        reason: js.ReasonOpt = None,
        dry_run: DryRunOpt = False,
        rate: js.PacedRateOpt = None,
        actor: js.ActorOpt = "cli",
        as_json: js.JsonOpt = False,
    ) -> None:
        failed = False

        async def main(runtime: Any) -> None:
            nonlocal failed
            engine = runtime.engine
            sel = ScopeSelection(definition_key=definition_key, version=version, node_key=node)
            if dry_run:
                doc = await preview_scope(engine, sel, action, rate=rate)
                if as_json:
                    js.print_json(doc)
                    return
                skipped = ", ".join(f"{n} {s}" for s, n in sorted(doc["skippedByStatus"].items()))
                sample = ", ".join(map(str, doc["sample"]))
                more = " (more: run again after)" if doc["truncated"] else ""
                out.print(
                    f"a run would {action} {doc['count']} instance(s){more}: {sample or '-'}; "
                    f"skipped by status: {skipped or 'none'}"
                )
                if doc["estimatedCompletion"] is not None:
                    out.print(js.paced_estimate(doc))
                return
            why = clean_reason(reason) if action == "suspend" else reason
            ctx, caller = js.operator(engine, actor)
            doc = await run_audited(
                ctx, caller, engine, sel, action, reason=why, rate=rate, max_seconds=None
            )
            done = "suspended" if action == "suspend" else "resumed"
            failed = doc["totals"]["failed"] > 0
            if as_json:
                js.print_json(doc)
                return
            if doc["results"]:
                out.print(_results_table(doc))
            t = doc["totals"]
            out.print(
                f"{t['selected']} selected: {t[done]} {done}, {t['skipped']} skipped, "
                f"{t['failed']} failed"
            )

        _run(as_json, main)
        if failed:
            raise typer.Exit(1)

    command.__doc__ = (
        "Suspend every running instance of a definition (each in its own transaction)."
        if action == "suspend"
        else "Resume every suspended instance of a definition (each in its own transaction)."
    )
    return command


instances_suspend_all = _definition_scope("suspend")
instances_resume_all = _definition_scope("resume")


def register(app: typer.Typer) -> None:
    """Add ``suspend-all`` and ``resume-all`` to the ``instances`` group."""
    app.command("suspend-all")(instances_suspend_all)
    app.command("resume-all")(instances_resume_all)
