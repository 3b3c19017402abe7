"""``flowledger migrate-instances`` (issue 30): migrate the running instances
of one definition from one version to another, from the command line.

``--definition KEY --from-version N --to-version M [--map old=new ...]
[--set field=value ...] [--instance ID ...] [--dry-run] --reason R`` — the
dry run (``--dry-run``) prints a rich table of every instance's verdict
(``ok`` / ``changed`` / ``blocked``), what changes or why it is blocked, and
the counts; without it the run migrates every instance not blocked (each in
its own transaction) and prints the same table with each outcome. ``--set``
values are JSON when they parse as JSON, else strings. ``--json`` prints
the whole document instead. Acts as ``--actor`` (default ``cli``) over every
tenant's instances of the ``--tenant`` (default ``default``) and writes the
same audit rows as the API (``migration.run`` and one ``instance.migrate``
per instance). Exit code 2 on a refused plan (the field named), 1 when an
instance failed."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer
from rich.table import Table

from flowledger.cli import jobs_support as js
from flowledger.cli.common import out
from flowledger.engine import Engine
from flowledger.errors import FlowledgerError
from flowledger.ops.migration import service
from flowledger.ops.migration.model import MigrationPlan
from flowledger.ops.migration.operator_runs import run_as


def _pairs(items: list[str] | None, option: str, *, values: bool) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise FlowledgerError(f"{option} {item!r}: give key=value", field=option.lstrip("-"))
        if values:
            try:
                found[key.strip()] = json.loads(value)
            except ValueError:
                found[key.strip()] = value
        else:
            found[key.strip()] = value.strip()
    return found


def _what(result: dict[str, Any]) -> str:
    if result["reasons"]:
        return "; ".join(f"{r['code']}: {r['message']}" for r in result["reasons"])
    parts = []
    for change in result["changes"]:
        if change["kind"] == "node_renamed":
            parts.append(", ".join(f"{n['from']}→{n['to']}" for n in change["nodes"]))
        elif change["kind"] == "assignee":
            added, removed = change["added"], change["removed"]
            parts.append(f"{change['nodeKey']}: +{added} -{removed}")
        elif change["kind"] == "timeout":
            added, canceled = change["added"], change["canceled"]
            parts.append(f"{change['nodeKey']}: timeouts +{added} -{canceled}")
        else:
            parts.append(f"fields {', '.join(change['fields'])}")
    return "; ".join(parts)


def verdict_table(results: list[dict[str, Any]], title: str, outcomes: dict[int, str]) -> Table:
    table = Table("instance", "verdict", "outcome", "at", "what", title=title)
    for r in results:
        at = ", ".join(sorted({t["nodeKey"] for t in r["tokens"]}))
        table.add_row(
            str(r["instanceId"]),
            r["verdict"],
            outcomes.get(int(r["instanceId"]), ""),
            at,
            _what(r),
        )
    return table


def _counts(results: list[dict[str, Any]]) -> str:
    found: dict[str, int] = {"ok": 0, "changed": 0, "blocked": 0}
    for r in results:
        found[r["verdict"]] += 1
    return ", ".join(f"{n} {v}" for v, n in found.items())


def migrate_instances(
    definition: Annotated[str, typer.Option("--definition", help="Definition key.")],
    from_version: Annotated[int, typer.Option("--from-version", min=1, help="Source version.")],
    to_version: Annotated[int, typer.Option("--to-version", min=1, help="Target version.")],
    reason: Annotated[str, typer.Option("--reason", help="Why (required, audited).")],
    mapping: Annotated[
        list[str] | None, typer.Option("--map", help="Node mapping old=new (repeatable).")
    ] = None,
    values: Annotated[
        list[str] | None,
        typer.Option("--set", help="Value of a new required form field, key=value (repeatable)."),
    ] = None,
    instances: Annotated[
        list[int] | None, typer.Option("--instance", help="Only these instances (repeatable).")
    ] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Only show the verdicts.")] = False,
    tenant: Annotated[str, typer.Option("--tenant", help="The definition's tenant.")] = "default",
    actor: js.ActorOpt = "cli",
    as_json: js.JsonOpt = False,
) -> None:
    """Migrate running instances to another version of their definition."""
    failed = False

    async def main(engine: Engine) -> None:
        nonlocal failed
        plan = MigrationPlan(
            definition_key=definition,
            from_versions=(from_version,),
            to_version=to_version,
            reason=reason,
            instance_ids=None if not instances else tuple(instances),
            mapping=_pairs(mapping, "--map", values=False),
            field_values=_pairs(values, "--set", values=True),
            tenant=tenant,
        )
        title = f"{definition} v{from_version} → v{to_version}"
        if dry_run:
            found = await service.preview(engine.db, plan, actor=actor, clock=engine.clock)
            if as_json:
                js.print_json({"mapping": found.mapping, "instances": found.results})
                return
            out.print(verdict_table(found.results, f"dry run: {title}", {}))
            out.print(f"{len(found.results)} instances: {_counts(found.results)}")
            return
        ctx, caller = js.operator(engine, actor)
        migration_id = await run_as(ctx, caller, plan, store=engine.store, clock=engine.clock)
        done = await service.progress(engine.db, migration_id, limit=10_000)
        failed = bool(done["progress"]["byOutcome"].get("failed"))
        if as_json:
            js.print_json(done)
            return
        results = [item["result"] for item in done["items"]]
        outcomes = {int(item["instanceId"]): item["outcome"] for item in done["items"]}
        out.print(verdict_table(results, f"migration {migration_id}: {title}", outcomes))
        by = ", ".join(f"{n} {o}" for o, n in sorted(done["progress"]["byOutcome"].items()))
        out.print(f"migration {migration_id}: {by or 'nothing selected'}")

    js.run_command(as_json, main)
    if failed:
        raise typer.Exit(1)
