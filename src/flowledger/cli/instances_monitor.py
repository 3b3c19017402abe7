"""``flowledger instances list | show | export`` (SPEC O-1, O-2, O-3): the
monitoring list with every filter of ``GET /instances`` and the per-status
counts, one instance with its position, tasks, tokens and latest trace, and
the CSV / XLSX export (at most 10,000 rows) written to a file. Thin commands
over :mod:`flowledger.ops` on the configured database; every tenant is
visible unless ``--tenant`` narrows it."""

from __future__ import annotations

import os
import shutil
from datetime import datetime
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from flowledger.cli.common import console, engine_session, out
from flowledger.cli.data import instances_app
from flowledger.cli.runtime import run_async
from flowledger.engine import queries
from flowledger.ops.monitor import export as instance_export
from flowledger.ops.monitor import queries as instance_queries
from flowledger.ops.monitor.filters import InstanceFilter
from flowledger.ops.monitor.queries import Sort
from flowledger.states import InstanceStatus

StatusOpt = Annotated[
    list[InstanceStatus] | None, typer.Option("--status", help="Status (repeatable).")
]
TenantOpt = Annotated[list[str] | None, typer.Option("--tenant", help="Tenant (repeatable).")]
TimeOpt = Annotated[datetime | None, typer.Option(formats=["%Y-%m-%dT%H:%M:%S%z"])]


def _filter(
    *,
    status: list[InstanceStatus] | None,
    definition: str | None,
    version: int | None,
    initiator: str | None,
    started_from: datetime | None,
    started_to: datetime | None,
    finished_from: datetime | None,
    finished_to: datetime | None,
    node: str | None,
    assignee: str | None,
    has_error: bool | None,
    stuck: int | None,
    parent: int | None,
    keyword: str | None,
    tenant: list[str] | None,
) -> InstanceFilter:
    return InstanceFilter(
        definition_key=definition,
        definition_version=version,
        statuses=tuple(s.value for s in status) if status else None,
        initiator=initiator,
        created_from=started_from,
        created_to=started_to,
        finished_from=finished_from,
        finished_to=finished_to,
        current_node=node,
        current_assignee=assignee,
        has_error=has_error,
        stuck_minutes=stuck,
        parent_instance_id=parent,
        keyword=keyword,
        tenants=tuple(tenant) if tenant else None,
    )


def _when(value: datetime | None) -> str:
    return "" if value is None else value.isoformat(timespec="seconds")


# The filter options, shared by list and export.
Definition = Annotated[str | None, typer.Option("--definition", help="Definition key.")]
Version = Annotated[int | None, typer.Option(min=1, help="Definition version.")]
Initiator = Annotated[str | None, typer.Option(help="Initiator user id.")]
Node = Annotated[str | None, typer.Option("--node", help="Current node.")]
Assignee = Annotated[str | None, typer.Option("--assignee", help="Current assignee.")]
HasError = Annotated[
    bool | None, typer.Option("--has-error/--no-error", help="With or without an error.")
]
Stuck = Annotated[
    int | None, typer.Option("--stuck", min=1, help="No engine progress for N minutes.")
]
Parent = Annotated[int | None, typer.Option("--parent", min=1, help="Parent instance id.")]
Keyword = Annotated[str | None, typer.Option(help="Instance id, trace id or form text.")]
SortOpt = Annotated[Sort, typer.Option(help="created, updated or finished.")]


@instances_app.command("list")
def instances_list(
    status: StatusOpt = None,
    definition: Definition = None,
    version: Version = None,
    initiator: Initiator = None,
    started_from: TimeOpt = None,
    started_to: TimeOpt = None,
    finished_from: TimeOpt = None,
    finished_to: TimeOpt = None,
    node: Node = None,
    assignee: Assignee = None,
    has_error: HasError = None,
    stuck: Stuck = None,
    parent: Parent = None,
    keyword: Keyword = None,
    tenant: TenantOpt = None,
    sort: SortOpt = "created",
    limit: Annotated[int, typer.Option(min=1, max=200)] = 50,
) -> None:
    """Instances newest first under the monitoring filters, with counts per status."""
    flt = _filter(
        status=status,
        definition=definition,
        version=version,
        initiator=initiator,
        started_from=started_from,
        started_to=started_to,
        finished_from=finished_from,
        finished_to=finished_to,
        node=node,
        assignee=assignee,
        has_error=has_error,
        stuck=stuck,
        parent=parent,
        keyword=keyword,
        tenant=tenant,
    )

    async def main() -> None:
        async with engine_session() as engine, engine.db.read() as conn:
            now = engine.clock.now()
            rows, more = await instance_queries.list_instances(
                conn, flt, now=now, sort=sort, limit=limit
            )
            where = await instance_queries.current_positions(conn, [r["id"] for r in rows])
            counts = await instance_queries.status_counts(conn, flt.without_statuses(), now=now)
        table = Table(
            "id", "definition", "status", "initiator", "at", "assignees", "created", "error"
        )
        for r in rows:
            table.add_row(
                str(r["id"]),
                f"{r['definition_key']} v{r['definition_version']}",
                r["status"],
                r["initiator"],
                ", ".join(where[r["id"]]["nodes"]),
                ", ".join(where[r["id"]]["assignees"]),
                _when(r["created_at"]),
                (r["error"] or "")[:60],
            )
        out.print(table)
        rough = counts.estimated  # the planner's estimates, printed "≈ n"
        shown = [f"{k}: {'≈ ' if k in rough else ''}{v}" for k, v in counts.counts.items() if v]
        out.print("  ".join(shown) or "no instances")
        if more is not None:
            out.print(f"(more than {limit}; narrow the filters or raise --limit)")

    run_async(main)


@instances_app.command("show")
def instances_show(
    instance_id: int, trace: Annotated[int, typer.Option(help="Latest trace rows.")] = 20
) -> None:
    """One instance: its state, tasks, tokens and latest engine trace."""

    async def main() -> None:
        async with engine_session() as engine, engine.db.read() as conn:
            detail = await queries.instance_detail(conn, instance_id, trace_limit=trace)
        if detail is None:
            console.print(f"[red]instance {instance_id} not found[/red]")
            raise typer.Exit(2)
        out.print(
            f"[bold]#{detail['id']}[/bold] {detail['definition_key']} "
            f"v{detail['definition_version']} — {detail['status']} "
            f"(tenant {detail['tenant_id']}, by {detail['initiator']}, "
            f"trace {detail['trace_id']})"
        )
        out.print(
            f"created {_when(detail['created_at'])}  updated {_when(detail['updated_at'])}"
            f"  finished {_when(detail['finished_at']) or '-'}"
        )
        if detail["error"]:
            out.print(f"[red]error[/red]: {detail['error']}")
        out.print(f"form: {detail['form_data']}")
        tasks = Table(
            "task", "node", "kind", "status", "assignee", "action", "created", title="tasks"
        )
        for t in detail["tasks"]:
            tasks.add_row(
                str(t["id"]),
                t["node_key"],
                t["kind"],
                t["status"],
                t["assignee"],
                t["action"] or "",
                _when(t["created_at"]),
            )
        out.print(tasks)
        tokens = Table("token", "node", "state", "forks", "created", title="tokens")
        for k in detail["tokens"]:
            tokens.add_row(
                str(k["id"]),
                k["node_key"],
                k["state"],
                str(k["fork_stack"]),
                _when(k["created_at"]),
            )
        out.print(tokens)
        steps = Table("at", "event", "node", "task", "job", title="trace (latest)")
        for s in detail["trace"]:
            steps.add_row(
                _when(s["created_at"]),
                s["event"],
                s["node_key"] or "",
                str(s["task_id"] or ""),
                str(s["job_id"] or ""),
            )
        out.print(steps)

    run_async(main)


@instances_app.command("export")
def instances_export(
    output: Annotated[Path, typer.Option("--output", "-o", help="File to write.")],
    format: Annotated[str, typer.Option("--format", help="csv or xlsx.")] = "csv",
    status: StatusOpt = None,
    definition: Definition = None,
    version: Version = None,
    initiator: Initiator = None,
    started_from: TimeOpt = None,
    started_to: TimeOpt = None,
    finished_from: TimeOpt = None,
    finished_to: TimeOpt = None,
    node: Node = None,
    assignee: Assignee = None,
    has_error: HasError = None,
    stuck: Stuck = None,
    parent: Parent = None,
    keyword: Keyword = None,
    tenant: TenantOpt = None,
    sort: SortOpt = "created",
) -> None:
    """Export the matching instances (at most 10,000) as CSV or XLSX."""
    if format not in ("csv", "xlsx"):
        console.print("[red]--format must be csv or xlsx[/red]")
        raise typer.Exit(2)
    flt = _filter(
        status=status,
        definition=definition,
        version=version,
        initiator=initiator,
        started_from=started_from,
        started_to=started_to,
        finished_from=finished_from,
        finished_to=finished_to,
        node=node,
        assignee=assignee,
        has_error=has_error,
        stuck=stuck,
        parent=parent,
        keyword=keyword,
        tenant=tenant,
    )

    async def main() -> None:
        async with engine_session() as engine:
            db, now = engine.db, engine.clock.now()
            plan = await instance_export.plan_export(db, flt, now=now, sort=sort)
            if format == "csv":
                with output.open("wb") as handle:
                    async for chunk in instance_export.csv_stream(
                        db, flt, plan, now=now, sort=sort
                    ):
                        handle.write(chunk)
            else:
                path = await instance_export.xlsx_file(db, flt, plan, now=now, sort=sort)
                try:
                    shutil.copyfile(path, output)
                finally:
                    os.unlink(path)
        out.print(
            f"wrote {plan.exported} of {plan.matched} matching instances to {output}"
            + (" (truncated)" if plan.truncated else "")
        )

    run_async(main)
