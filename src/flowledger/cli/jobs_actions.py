"""The operator actions of ``flowledger jobs`` (SPEC L-24): ``retry`` and
``skip`` (one id: that job; several: a batch) and ``replay`` (conditional
replay of dead / failed jobs, ``--preview`` first if you like, then a rich
progress bar that follows the replay batch until none of its jobs is pending
or running; ``--no-follow`` returns at once).

The CLI acts as the operator named by ``--actor`` (default ``cli``) over
every tenant and writes the same ``operation_audit`` rows as the API
(``job.retry``, ``job.batch_retry``, ``job.skip``, ``job.batch_skip``,
``job.replay``) through the API's own services,
:mod:`flowledger.ops.jobs.operator_actions` (the rules live in
:mod:`flowledger.ops.jobs.actions` and :mod:`flowledger.ops.jobs.replay`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import time
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any

import typer
from fastapi.encoders import jsonable_encoder
from pydantic.alias_generators import to_camel
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from flowledger.api.routers import job_actions as models
from flowledger.cli import jobs_support as js
from flowledger.cli.common import console, out
from flowledger.engine import Engine
from flowledger.errors import FlowledgerError
from flowledger.ops.jobs import operator_actions
from flowledger.ops.jobs import replay as job_replay
from flowledger.ops.jobs.batching import DEFAULT_RATE, MAX_REPLAY
from flowledger.ops.jobs.filters import JobFilter


def _items_table(items: list[models.ItemOutcomePublic]) -> Table:
    table = Table("id", "outcome", "was", "reason")
    for item in items:
        table.add_row(str(item.id), item.outcome, item.status or "", item.reason or "")
    return table


def _payload(raw: str | None, count: int) -> dict[str, Any] | None:
    if raw is None:
        return None
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise FlowledgerError(f"--payload is not JSON: {exc}", field="payload") from exc
    if not isinstance(value, dict) or count != 1:
        raise FlowledgerError(
            "--payload takes a JSON object and exactly one job id", field="payload"
        )
    return value


def retry(
    ids: js.IdsArg,
    payload: Annotated[
        str | None, typer.Option(help="New payload (JSON object); one job only.")
    ] = None,
    rate: js.RateOpt = DEFAULT_RATE,
    reason: js.ReasonOpt = None,
    actor: js.ActorOpt = "cli",
    as_json: js.JsonOpt = False,
) -> None:
    """Retry one job now, or several as a batch staggered at --rate per second."""

    async def main(engine: Engine) -> None:
        new_payload = _payload(payload, len(ids))
        ctx, caller = js.operator(engine, actor)
        if len(ids) == 1:
            row = await operator_actions.retry_as(
                ctx, caller, ids[0], payload=new_payload, reason=reason
            )
            _show_job(models.JobActionPublic.from_row(row), as_json)
            return
        result = await operator_actions.batch_retry_as(
            ctx, caller, list(ids), rate=rate, reason=reason
        )
        public = models.batch_retry_public(result)
        if as_json:
            js.print_json(public.model_dump(mode="json", by_alias=True))
            return
        out.print(_items_table(public.items))
        window = public.estimated_completion
        out.print(
            f"submitted {public.submitted}, skipped {public.skipped} at {public.rate}/s "
            f"(due {js.text(window.start)} … {js.text(window.end)}), batch {public.replay_batch_id}"
        )

    js.run_command(as_json, main)


def skip(
    ids: js.IdsArg,
    reason: js.ReasonOpt = None,
    actor: js.ActorOpt = "cli",
    as_json: js.JsonOpt = False,
) -> None:
    """Skip (cancel) one job, or several as a batch."""

    async def main(engine: Engine) -> None:
        ctx, caller = js.operator(engine, actor)
        if len(ids) == 1:
            row = await operator_actions.skip_job_as(ctx, caller, ids[0], reason=reason)
            _show_job(models.JobActionPublic.from_row(row), as_json)
            return
        result = await operator_actions.batch_skip_as(ctx, caller, list(ids), reason=reason)
        public = models.batch_skip_public(result)
        if as_json:
            js.print_json(public.model_dump(mode="json", by_alias=True))
            return
        out.print(_items_table(public.items))
        out.print(f"submitted {public.submitted}, skipped {public.skipped}")

    js.run_command(as_json, main)


def _shown_filter(flt: JobFilter) -> dict[str, Any]:
    """The replay's filter as the audit shows it: its set fields, camelCase,
    JSON-safe (the API shows its request body the same way)."""
    fields = {to_camel(k): v for k, v in dataclasses.asdict(flt).items() if v is not None}
    shown: dict[str, Any] = jsonable_encoder(fields)
    return shown


def _show_job(job: models.JobActionPublic, as_json: bool) -> None:
    if as_json:
        js.print_json(job.model_dump(mode="json", by_alias=True))
        return
    out.print(
        f"job {job.id} ({job.type}) is {job.status}, generation {job.generation}, "
        f"due {js.text(job.run_at)}"
    )


def _before(age: float | None, before: str | None) -> datetime | None:
    if age is not None and before is not None:
        raise FlowledgerError("give --age or --before, not both", field="age")
    if age is not None:
        return datetime.now(UTC) - timedelta(seconds=age)
    if before is None:
        return None
    try:
        when = datetime.fromisoformat(before)
    except ValueError as exc:
        raise FlowledgerError(f"--before is not an ISO time: {before!r}", field="before") from exc
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


async def _follow(
    engine: Engine, batch_id: str, total: int, poll: float, give_up_s: float
) -> dict[str, int]:
    """Poll the batch's jobs until none is pending or running, with a progress bar."""
    started = time.monotonic()
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=console) as progress:
        task = progress.add_task(f"replay {batch_id[:8]}", total=total)
        while True:
            counts = await job_replay.batch_progress(engine.db, batch_id)
            open_ = counts.get("pending", 0) + counts.get("running", 0)
            finished = ", ".join(
                f"{n} {s}" for s, n in sorted(counts.items()) if s not in ("pending", "running")
            )
            progress.update(
                task, completed=total - open_, description=f"replay {batch_id[:8]} {finished}"
            )
            if open_ == 0:
                return counts
            if give_up_s and time.monotonic() - started > give_up_s:
                raise FlowledgerError(
                    f"replay {batch_id} still has {open_} jobs pending or running", field="timeout"
                )
            await asyncio.sleep(poll)


def replay(
    types: js.TypesOpt = None,
    statuses: Annotated[
        list[str] | None, typer.Option("--status", "-s", help="dead and/or failed (default both).")
    ] = None,
    instance: js.InstanceOpt = None,
    trace: js.TraceOpt = None,
    keyword: js.KeywordOpt = None,
    fingerprint: js.FingerprintOpt = None,
    age: Annotated[
        float | None, typer.Option(min=0, help="Enqueued at least this many seconds ago.")
    ] = None,
    before: Annotated[str | None, typer.Option(help="Enqueued at or before (ISO time).")] = None,
    limit: Annotated[int, typer.Option(min=1, max=MAX_REPLAY)] = MAX_REPLAY,
    rate: js.RateOpt = DEFAULT_RATE,
    preview: Annotated[bool, typer.Option("--preview", help="Only show what would run.")] = False,
    follow: Annotated[
        bool, typer.Option("--follow/--no-follow", help="Follow the batch with a progress bar.")
    ] = True,
    poll: Annotated[float, typer.Option(min=0.05, help="Follow: seconds between polls.")] = 0.5,
    timeout: Annotated[float, typer.Option(min=0, help="Follow: give up after (0: never).")] = 0,
    reason: js.ReasonOpt = None,
    actor: js.ActorOpt = "cli",
    as_json: js.JsonOpt = False,
) -> None:
    """Replay dead / failed jobs matching the filter, at --rate per second.

    Takes at most --limit jobs, oldest first; --preview only shows the match.
    The progress bar follows the replay batch until none of its jobs is
    pending or running (--no-follow: return at once)."""

    async def main(engine: Engine) -> None:
        flt = js.job_filter(
            types, statuses, instance, trace, keyword, fingerprint, _before(age, before)
        )
        if preview:
            shown = models.preview_public(
                await job_replay.replay_preview(engine.db, flt, limit=limit)
            )
            if as_json:
                js.print_json(shown.model_dump(mode="json", by_alias=True))
                return
            table = Table("id", "type", "status", "enqueued", "last error", title="first jobs")
            for s in shown.samples:
                table.add_row(
                    str(s.id), s.type, s.status, js.text(s.created_at), js.text(s.last_error, 60)
                )
            out.print(table)
            matched = f"{'≈ ' if shown.matched_estimated else ''}{shown.matched}"
            out.print(f"matched {matched}, a replay would submit {shown.would_submit}")
            return
        ctx, caller = js.operator(engine, actor)
        result = await operator_actions.replay_as(
            ctx,
            caller,
            flt,
            shown_filter=_shown_filter(flt),
            limit=limit,
            rate=rate,
            reason=reason,
        )
        batch_id = str(result.replay_batch_id)
        public = models.replay_public(result)
        if not as_json:
            window = public.estimated_completion
            out.print(
                f"matched {public.matched}, submitted {public.submitted}, skipped {public.skipped} "
                f"at {public.rate}/s (due {js.text(window.start)} … {js.text(window.end)}), "
                f"batch {public.replay_batch_id}"
            )
        counts = None
        if follow and public.submitted:
            counts = await _follow(engine, batch_id, public.submitted, poll, timeout)
            if not as_json:
                out.print("done: " + ", ".join(f"{n} {s}" for s, n in sorted(counts.items())))
        if as_json:
            body = public.model_dump(mode="json", by_alias=True)
            if counts is not None:
                body["progress"] = counts
            js.print_json(body)

    js.run_command(as_json, main)
