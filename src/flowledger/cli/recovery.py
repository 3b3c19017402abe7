"""``flowledger recover ACTION`` (SPEC O-18): targeted recovery from the
command line — ``--preview`` shows what would be touched (the count and
the first 20 items, each with what will be done); without it, the run walks
the plan with a rich progress bar and prints every item's outcome and the
totals. Options: ``--instance``, ``--min-age`` (since enqueue: ``45``,
``30m``, ``2h``, ``1d``; plain numbers are minutes), ``--limit`` (1 to 500,
default 100), ``--rate`` (the replay stagger, per second), ``--reason``,
``--actor``, ``--json``.

Acts over every tenant as the operator ``--actor`` (default ``cli``) and
writes the same ``operation_audit`` row as the API (``recovery.run``). Exit
code 2 on an error (an unknown action names the valid ones), 1 when some
item failed. The rules live in :mod:`flowledger.ops.recovery.plan` (the
actions and the filter in :mod:`flowledger.ops.recovery.model`) and
:mod:`flowledger.ops.recovery.actions`."""

from __future__ import annotations

import re
from typing import Annotated

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from flowledger.api.routers import recovery as models
from flowledger.cli import jobs_support as js
from flowledger.cli.common import console, out
from flowledger.engine import Engine
from flowledger.errors import FlowledgerError
from flowledger.ops.jobs.batching import DEFAULT_RATE
from flowledger.ops.recovery import model as plans
from flowledger.ops.recovery.actions import run_as
from flowledger.ops.recovery.plan import recovery_preview

_AGE = re.compile(r"^\s*(\d+)\s*([mhd]?)\s*$")
_MINUTES = {"": 1, "m": 1, "h": 60, "d": 1440}


def parse_age(text: str) -> int:
    """``45`` / ``30m`` / ``2h`` / ``1d`` → minutes."""
    match = _AGE.match(text)
    if match is None:
        raise FlowledgerError(
            f"--min-age {text!r}: give minutes (45) or 30m, 2h, 1d", field="minAge"
        )
    return int(match.group(1)) * _MINUTES[match.group(2)]


def _table(rows: list[models.RecoveryItemPublic], title: str) -> Table:
    table = Table("do", "what", "job", "task", "instance", "type", "status", "why", title=title)
    for r in rows:
        target = f"outbox {r.outbox_id}" if r.outbox_id is not None else r.target
        table.add_row(
            r.action,
            target,
            js.text(r.job_id),
            js.text(r.task_id),
            js.text(r.instance_id),
            js.text(r.job_type),
            js.text(r.status),
            js.text(getattr(r, "detail", None) or r.reason, 70),
        )
    return table


def recover(
    action: Annotated[str, typer.Argument(help=", ".join(plans.ACTIONS))],
    instance: Annotated[int | None, typer.Option("--instance", help="Only this instance.")] = None,
    min_age: Annotated[
        str, typer.Option("--min-age", help="Since enqueue: 45 (minutes), 30m, 2h, 1d.")
    ] = "0",
    limit: Annotated[int, typer.Option(min=1, max=plans.MAX_LIMIT)] = plans.DEFAULT_LIMIT,
    rate: js.RateOpt = DEFAULT_RATE,
    preview: Annotated[bool, typer.Option("--preview", help="Only show what would run.")] = False,
    reason: js.ReasonOpt = None,
    actor: js.ActorOpt = "cli",
    as_json: js.JsonOpt = False,
) -> None:
    """Recover one class of stuck work (its job types only): retry dead jobs,
    wake overdue ones, reclaim expired leases, recreate missing jobs.
    Unconfirmed external outcomes are listed as needing a person, never resent."""
    failed = False

    async def main(engine: Engine) -> None:
        nonlocal failed
        plans.job_types(action)
        flt = plans.RecoveryFilter(
            instance_id=instance, min_age_minutes=parse_age(min_age), limit=limit
        )
        ctx, caller = js.operator(engine, actor)
        if preview:
            shown = models.preview_public(
                await recovery_preview(engine.db, action, flt, now=ctx.now())
            )
            if as_json:
                js.print_json(shown.model_dump(mode="json", by_alias=True))
                return
            out.print(_table(shown.samples, f"{action}: first {len(shown.samples)}"))
            counts = ", ".join(f"{n} {a}" for a, n in sorted(shown.by_action.items()))
            out.print(f"a run would touch {shown.count} ({counts or 'nothing'})")
            return
        columns = (
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
        )
        with Progress(*columns, console=console, disable=as_json) as bar:
            task = bar.add_task(f"recover {action}", total=None)

            def advance(done: int, total: int) -> None:
                bar.update(task, completed=done, total=total)

            run = await run_as(
                ctx,
                caller,
                action,
                flt,
                shown_filter={
                    "instanceId": instance,
                    "minAgeMinutes": flt.min_age_minutes,
                    "limit": limit,
                    "ratePerSecond": rate,
                },
                snapshots=engine.snapshots,
                hooks=engine.hooks,
                rate=rate,
                reason=reason,
                progress=advance,
            )
            bar.update(task, completed=len(run.items), total=len(run.items))
        public = models.run_public(run)
        failed = public.totals.failed > 0
        if as_json:
            js.print_json(public.model_dump(mode="json", by_alias=True))
            return
        if public.items:
            out.print(_table(list(public.items), f"{action}: batch {public.batch_id}"))
        t = public.totals
        window = public.estimated_completion
        out.print(
            f"{t.total} items: {t.done} done, {t.skipped} skipped, {t.failed} failed; "
            f"{public.submitted} jobs due at {public.rate}/s "
            f"({js.text(window.start)} … {js.text(window.end)})"
        )

    js.run_command(as_json, main)
    if failed:
        raise typer.Exit(1)
