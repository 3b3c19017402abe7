"""``flowledger analytics`` (SPEC O-14) and ``flowledger retention
preview|run|policies`` (O-20) from a terminal. ``analytics`` prints the
summary tables of every panel (or one with ``--panel``); ``--json`` prints
the REST shapes instead. Reads see every tenant. ``retention run`` writes the
same ``operation_audit`` row as the API (actor ``--actor``, default ``cli``).
No logic lives here: the commands call :mod:`flowledger.ops`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

import typer
from rich.table import Table

from flowledger.cli import jobs_support as js
from flowledger.cli.common import out
from flowledger.engine import Engine
from flowledger.ops.analytics import async_work as analytics_async
from flowledger.ops.analytics import instances as instance_panels
from flowledger.ops.analytics import tasks as analytics_tasks
from flowledger.ops.analytics.sql import AnalyticsScope
from flowledger.ops.analytics.time_zone import resolve_time_zone
from flowledger.ops.retention import changes as retention_actions
from flowledger.ops.retention import runs as retention_ops
from flowledger.ops.retention.policies import load_policies
from flowledger.settings import get_settings

PANELS = (
    "totals",
    "daily",
    "top-definitions",
    "node-bottlenecks",
    "approver-workload",
    "timeouts",
    "async-health",
)
retention_app = typer.Typer(no_args_is_help=True, help="Data retention: policies, preview, run.")

DefinitionOpt = Annotated[str | None, typer.Option("--definition", help="One definition key.")]
PolicyOpt = Annotated[
    list[str] | None, typer.Option("--policy", help="Only this policy (repeatable).")
]


async def panel_data(
    engine: Engine, panel: str, scope: AnalyticsScope, *, tz: str | None, days: int
) -> dict[str, Any]:
    db, now = engine.db, engine.clock.now()
    if panel == "totals":
        return await instance_panels.totals(db, scope, now=now)
    if panel == "daily":
        return await instance_panels.daily(
            db,
            scope,
            now=now,
            zone=resolve_time_zone(tz, default=get_settings().analytics_time_zone),
        )
    if panel == "top-definitions":
        return await instance_panels.top_definitions(db, scope, now=now, days=days)
    if panel == "node-bottlenecks":
        return await analytics_tasks.node_bottlenecks(db, scope, now=now, days=days)
    if panel == "approver-workload":
        return await analytics_tasks.approver_workload(db, scope, now=now, days=days)
    if panel == "timeouts":
        return await analytics_tasks.timeouts(db, scope, now=now)
    return await analytics_async.async_health(db, scope)


def _rows_table(title: str, rows: list[dict[str, Any]]) -> Table:
    columns = list(rows[0]) if rows else ["(none)"]
    table = Table(*columns, title=title)
    for row in rows:
        table.add_row(*(_cell(row[c]) for c in columns))
    return table


def _cell(value: Any) -> str:
    if isinstance(value, dict):
        return ", ".join(f"{k}={v}" for k, v in value.items() if v)
    return "—" if value is None else js.text(value)


def _tables(panel: str, data: dict[str, Any]) -> list[Table]:
    if panel == "totals":
        table = Table("figure", "value", title="totals")
        for key, value in js.flat({k: v for k, v in data.items() if k != "definitionKey"}):
            table.add_row(key, _cell(value))
        return [table]
    if panel == "daily":
        return [_rows_table(f"daily ({data['timeZone']})", data["days"])]
    if panel == "timeouts":
        title = f"timeouts: {data['overdue']} overdue, {data['dueWithin24h']} due within 24 h"
        return [_rows_table(title, data["overdueTasks"])]
    if panel == "async-health":
        return [
            _rows_table("jobs by type", data["jobs"]),
            _rows_table("webhook deliveries", [data["webhookDeliveries"]]),
            _rows_table("subprocess instances", [data["subprocessInstances"]]),
        ]
    return [_rows_table(panel, data["items"])]


def analytics(
    panel: Annotated[
        str | None, typer.Option(help=f"One panel: {', '.join(PANELS)} (default: all).")
    ] = None,
    definition: DefinitionOpt = None,
    tz: Annotated[str | None, typer.Option(help="Time zone of the daily panel.")] = None,
    days: Annotated[int, typer.Option(min=1, max=366, help="Period of the panels.")] = 30,
    as_json: js.JsonOpt = False,
) -> None:
    """Analytics summary tables (SPEC O-14): totals, daily, top definitions,
    node bottlenecks, approver workload, timeouts, async health."""
    if panel is not None and panel not in PANELS:
        raise typer.BadParameter(f"one of {', '.join(PANELS)}", param_hint="--panel")
    chosen = [panel] if panel else list(PANELS)

    async def main(engine: Engine) -> None:
        scope = AnalyticsScope(definition_key=definition)
        result = {p: await panel_data(engine, p, scope, tz=tz, days=days) for p in chosen}
        if as_json:
            js.print_json(result if panel is None else result[panel])
            return
        for name in chosen:
            for table in _tables(name, result[name]):
                out.print(table)

    js.run_command(as_json, main)


def _items_table(title: str, items: list[dict[str, Any]]) -> Table:
    table = Table("policy", "keep days", "cut-off", "rows", "tables", "skipped", title=title)
    for i in items:
        table.add_row(
            i["policy"],
            str(i["keepDays"]),
            js.text(i["cutoff"]),
            str(i["rows"]),
            _cell(i["tables"]),
            i["skipped"] or "",
        )
    return table


@retention_app.command("policies")
def policies(as_json: js.JsonOpt = False) -> None:
    """The retention policies with their effective settings."""

    async def main(engine: Engine) -> None:
        async with engine.db.read() as conn:
            items = [p.public() for p in await load_policies(conn)]
        if as_json:
            js.print_json({"items": items})
            return
        out.print(
            _rows_table(
                "retention policies",
                [
                    {k: i[k] for k in ("name", "enabled", "keepDays", "defaultKeepDays")}
                    for i in items
                ],
            )
        )

    js.run_command(as_json, main)


@retention_app.command("preview")
def preview(policy: PolicyOpt = None, as_json: js.JsonOpt = False) -> None:
    """How many rows a run now would remove, per policy (no change)."""

    async def main(engine: Engine) -> None:
        result = await retention_ops.preview(engine.db, now=engine.clock.now(), policies=policy)
        if as_json:
            js.print_json(result)
            return
        out.print(_items_table(f"retention preview: {result['rows']} rows", result["items"]))

    js.run_command(as_json, main)


@retention_app.command("run")
def run(policy: PolicyOpt = None, actor: js.ActorOpt = "cli", as_json: js.JsonOpt = False) -> None:
    """Run the enabled policies now, in batches of 1,000 rows per transaction."""

    async def main(engine: Engine) -> None:
        ctx, caller = js.operator(engine, actor)
        result = await retention_actions.run_now(ctx, caller, policy)
        if as_json:
            js.print_json(result)
            return
        started: datetime = result["startedAt"]
        title = (
            f"retention run {result['id']} ({started:%Y-%m-%d %H:%M:%S}): "
            f"{result['rowsRemoved']} rows in {result['durationMs']} ms"
        )
        out.print(_items_table(title, result["items"]))

    js.run_command(as_json, main)
