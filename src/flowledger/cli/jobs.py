"""``flowledger jobs …``: the job ledger from a terminal (SPEC L-23 … L-25):
``status``, ``list``, ``show``, ``chain``, ``clusters`` (reads, here) and
``retry``, ``skip``, ``replay`` (operator actions, in
:mod:`flowledger.cli.jobs_actions`). Tables go to stdout with rich;
``--json`` prints one JSON document on stdout instead (the shapes of the
REST API); messages, errors and progress go to stderr. A failed command
exits with code 2. Reads see every tenant. No logic lives here: the commands
call :mod:`flowledger.ops`.
"""

from __future__ import annotations

import json
from typing import Annotated

import typer
from fastapi.encoders import jsonable_encoder
from rich.table import Table

from flowledger.cli import jobs_actions
from flowledger.cli import jobs_support as js
from flowledger.cli.common import console, out
from flowledger.engine import Engine
from flowledger.ops.jobs import queries as job_queries
from flowledger.ops.jobs.failure_clusters import failure_clusters
from flowledger.ops.runtime.status import runtime_status

jobs_app = typer.Typer(
    no_args_is_help=True, help="The job ledger: status, queries, retry, skip and replay."
)

# -------------------------------------------------------------------- reads


@jobs_app.command("status")
def status(as_json: js.JsonOpt = False) -> None:
    """The runtime status panel: workers, slots, backlog, stuck, dead, P95 …"""

    async def main(engine: Engine) -> None:
        figures = await runtime_status(engine.db)
        if as_json:
            js.print_json(figures)
            return
        table = Table("figure", "value", title="job ledger runtime status")
        for key, value in js.flat(figures):
            table.add_row(key, "—" if value is None else js.text(value))
        out.print(table)

    js.run_command(as_json, main)


@jobs_app.command("list")
def list_(
    types: js.TypesOpt = None,
    statuses: js.StatusesOpt = None,
    instance: js.InstanceOpt = None,
    trace: js.TraceOpt = None,
    keyword: js.KeywordOpt = None,
    fingerprint: js.FingerprintOpt = None,
    limit: Annotated[int, typer.Option(min=1, max=200)] = 50,
    cursor: Annotated[str | None, typer.Option(help="`next` of the previous page.")] = None,
    as_json: js.JsonOpt = False,
) -> None:
    """Jobs newest first, filtered; prints the next page's cursor when there is one."""

    async def main(engine: Engine) -> None:
        flt = js.job_filter(types, statuses, instance, trace, keyword, fingerprint)
        page = await job_queries.list_jobs(engine.db, flt, limit=limit, cursor=cursor)
        if as_json:
            js.print_json(page)
            return
        out.print(js.jobs_table(page["items"]))
        if page.get("next"):
            console.print(f"more: --cursor {page['next']}")

    js.run_command(as_json, main)


@jobs_app.command("show")
def show(job_id: Annotated[int, typer.Argument(min=1)], as_json: js.JsonOpt = False) -> None:
    """One job with every attempt of every generation."""

    async def main(engine: Engine) -> None:
        job = await job_queries.job_detail(engine.db, job_id, tenants=None)
        if as_json:
            js.print_json(job)
            return
        table = Table("field", "value", title=f"job {job_id}")
        for key, value in job.items():
            if key != "executions":
                table.add_row(key, js.text(value, 200))
        out.print(table)
        attempts = Table(
            "gen", "attempt", "status", "node", "started", "ms", "error", title="attempts"
        )
        for a in job.get("executions", []):
            attempts.add_row(
                js.text(a.get("generation")),
                js.text(a.get("attempt")),
                js.text(a.get("status")),
                js.text(a.get("nodeId")),
                js.text(a.get("startedAt")),
                js.text(a.get("durationMs")),
                js.text(a.get("error"), 60),
            )
        out.print(attempts)

    js.run_command(as_json, main)


@jobs_app.command("chain")
def chain(trace_id: str, as_json: js.JsonOpt = False) -> None:
    """Every job of one traceId, oldest first."""

    async def main(engine: Engine) -> None:
        result = await job_queries.job_chain(engine.db, trace_id, tenants=None)
        if as_json:
            js.print_json(result)
            return
        out.print(js.jobs_table(result["jobs"], title=f"trace {trace_id}"))

    js.run_command(as_json, main)


@jobs_app.command("clusters")
def clusters(
    by: Annotated[str, typer.Option(help="reason, type, instance or trace.")] = "reason",
    types: js.TypesOpt = None,
    statuses: js.StatusesOpt = None,
    keyword: js.KeywordOpt = None,
    limit: Annotated[int, typer.Option(min=1, max=200)] = 50,
    samples: Annotated[int, typer.Option(min=0, max=20)] = 3,
    as_json: js.JsonOpt = False,
) -> None:
    """Dead and failed jobs grouped by error reason, type, instance or traceId."""

    async def main(engine: Engine) -> None:
        flt = js.job_filter(types, statuses, keyword=keyword)
        found = await failure_clusters(engine.db, flt, by=by, limit=limit, samples=samples)
        if as_json:
            js.print_json(found)
            return
        table = Table("key", "count", "pattern", "first", "last", "replay with", title=f"by {by}")
        for c in found:
            table.add_row(
                js.text(c.get("key")),
                str(c["count"]),
                js.text(c.get("pattern"), 60),
                js.text(c.get("firstSeenAt")),
                js.text(c.get("lastSeenAt")),
                json.dumps(jsonable_encoder(c.get("filter"))),
            )
        out.print(table)

    js.run_command(as_json, main)


jobs_app.command("retry")(jobs_actions.retry)
jobs_app.command("skip")(jobs_actions.skip)
jobs_app.command("replay")(jobs_actions.replay)
