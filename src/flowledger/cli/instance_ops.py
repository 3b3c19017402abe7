"""``flowledger instances diagnose|force-jump|recover`` (SPEC O-4, O-6,
O-10, O-12): thin commands over the diagnostics read model and the engine,
on the configured database (like the other ``instances`` commands).

- ``diagnose ID`` prints the verdict first, then the conclusions, then the
  node run states and open joins, as rich tables (``--json`` prints the
  whole document instead);
- ``force-jump ID --target T --reason R [--from-node N] [--yes]`` shows the
  preview and asks before doing it unless ``--yes``;
- ``recover --definition K --node N --stuck-minutes M --reason R
  [--rate R] [--dry-run]`` runs the batch recovery (at most ``--rate``
  instances per second; no bound on how long that takes, unlike the API's
  60 s) and prints each instance's result and the totals; ``--dry-run``
  also prints how long a run at ``--rate`` would take.

Each mutation writes its ``operation_audit`` row (actor ``cli``), like the API."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer
from fastapi.encoders import jsonable_encoder
from rich.table import Table

from flowledger.cli import jobs_support as js
from flowledger.cli.common import console, engine_session, out
from flowledger.cli.runtime import run_async
from flowledger.db.engine_schema import operation_audit
from flowledger.engine import Engine
from flowledger.engine.force_jump import JumpOutcome
from flowledger.errors import FlowledgerError
from flowledger.ops.diagnostics.instance import instance_diagnostics
from flowledger.ops.recovery.batch_recovery import RecoverySelection, batch_recover

ACTOR = "cli"


def register(app: typer.Typer) -> None:
    """Add the commands to the ``instances`` group."""
    app.command("diagnose")(instances_diagnose)
    app.command("force-jump")(instances_force_jump)
    app.command("recover")(instances_recover)


def _fail(exc: FlowledgerError) -> typer.Exit:
    where = f" (field {exc.field})" if exc.field else ""
    console.print(f"[red]{exc.code}[/red]{where}: {exc.message}")
    return typer.Exit(2)


async def _audit(
    engine: Engine, action: str, target_type: str, target_id: str, reason: str, detail: Any
) -> None:
    async with engine.db.begin() as conn:
        await conn.execute(
            operation_audit.insert().values(
                actor=ACTOR,
                action=action,
                target_type=target_type,
                target_id=target_id,
                reason=reason,
                detail=jsonable_encoder(detail),
                result="ok",
                created_at=engine.clock.now(),
            )
        )


def _findings_tables(doc: dict[str, Any]) -> list[Table]:
    verdict = doc["verdict"]
    head = Table("verdict", "action", "params", title=f"instance {doc['instance']['id']}")
    head.add_row(
        verdict["message"], verdict["action"] or "", json.dumps(verdict["params"], default=str)
    )
    conclusions = Table("level", "rule", "message", "tasks", "tokens", "jobs", "repair")
    for c in doc["conclusions"]:
        ev = c["evidence"]
        conclusions.add_row(
            c["level"],
            c["rule"],
            c["message"],
            ",".join(map(str, ev["taskIds"])),
            ",".join(map(str, ev["tokenIds"])),
            ",".join(map(str, ev["jobIds"])),
            json.dumps(c["repair"], default=str) if c["repair"] else "",
        )
    if not doc["conclusions"]:
        conclusions.add_row("", "", "no conclusion", "", "", "", "")
    nodes = Table("node", "type", "state", "visits", "error")
    for n in doc["nodes"]:
        error = n["error"]["message"] if n["error"] else ""
        nodes.add_row(n["key"], n["type"], n["state"], str(n["visits"]), error or "")
    tables = [head, conclusions, nodes]
    if doc["tokens"]["joins"]:
        joins = Table("join", "fork", "arrived", "awaited")
        for j in doc["tokens"]["joins"]:
            joins.add_row(
                str(j["joinNode"]),
                j["forkNode"],
                ", ".join(str(a["branch"]) for a in j["arrived"]),
                ", ".join(f"{w['branch']} (at {', '.join(w['atNodes'])})" for w in j["awaited"]),
            )
        tables.append(joins)
    return tables


def instances_diagnose(
    instance_id: Annotated[int, typer.Argument(min=1)],
    as_json: Annotated[bool, typer.Option("--json", help="Print the whole document.")] = False,
) -> None:
    """The verdict, the consistency conclusions and the node run states."""

    async def main() -> None:
        async with engine_session() as engine, engine.db.read() as conn:
            try:
                doc = await instance_diagnostics(
                    conn, instance_id, tenants=None, now=engine.clock.now()
                )
            except FlowledgerError as exc:
                raise _fail(exc) from exc
        if as_json:
            out.print_json(json.dumps(jsonable_encoder(doc)))
            return
        for table in _findings_tables(doc):
            out.print(table)

    run_async(main)


def _jump_tables(outcome: JumpOutcome) -> list[Table]:
    ended = Table("task", "node", "kind", "assignee", "status", title="tasks terminated (skipped)")
    for t in outcome.terminated_tasks:
        ended.add_row(str(t["taskId"]), t["nodeKey"], t["kind"], t["assignee"], t["status"])
    tokens = Table("token", "node", "state", title="tokens consumed")
    for k in outcome.consumed_tokens:
        tokens.add_row(str(k["tokenId"]), k["nodeKey"], k["state"])
    jobs = Table("job", "type", "node", "status", title="advancement jobs canceled")
    for j in outcome.canceled_jobs:
        jobs.add_row(str(j["jobId"]), j["type"], j["nodeKey"] or "", j["status"])
    created = Table("what", "node", "detail", title=f"entering {outcome.target!r} creates")
    for t in outcome.created_tasks:
        created.add_row(f"{t['kind']} task", t["nodeKey"], f"{t['assignee']} ({t['status']})")
    for j in outcome.created_jobs:
        created.add_row(f"{j['type']} job", j["nodeKey"] or "", str(j["runAt"]))
    return [ended, tokens, jobs, created]


def instances_force_jump(
    instance_id: Annotated[int, typer.Argument(min=1)],
    target: Annotated[str, typer.Option("--target", help="The node to jump to.")],
    reason: Annotated[str, typer.Option("--reason", help="Why (required, audited).")],
    from_node: Annotated[
        str | None, typer.Option("--from-node", help="Move only the tokens at this node.")
    ] = None,
    yes: Annotated[bool, typer.Option("--yes", help="Do not ask for confirmation.")] = False,
) -> None:
    """Show what a force jump changes, ask, then do it (SPEC O-4)."""

    async def main() -> None:
        async with engine_session() as engine:
            kwargs: dict[str, Any] = {
                "target": target,
                "reason": reason,
                "actor": ACTOR,
                "from_node": from_node,
            }
            try:
                preview = await engine.force_jump(instance_id, preview=True, **kwargs)
            except FlowledgerError as exc:
                raise _fail(exc) from exc
            for table in _jump_tables(preview):
                out.print(table)
            if not yes and not typer.confirm("Do the force jump?", default=False):
                console.print("nothing changed")
                raise typer.Exit(1)
            try:
                done = await engine.force_jump(instance_id, **kwargs)
            except FlowledgerError as exc:
                raise _fail(exc) from exc
            await _audit(
                engine,
                "instance.force_jump",
                "instance",
                str(instance_id),
                reason,
                {
                    "target": target,
                    "fromNode": from_node,
                    "terminatedTasks": [t["taskId"] for t in done.terminated_tasks],
                    "consumedTokens": [t["tokenId"] for t in done.consumed_tokens],
                    "canceledJobs": [j["jobId"] for j in done.canceled_jobs],
                    "createdTasks": [t["taskId"] for t in done.created_tasks],
                },
            )
            out.print(
                f"instance {instance_id} jumped to [bold]{target}[/bold]; "
                f"now {done.instance_status}"
            )

    run_async(main)


def instances_recover(
    definition: Annotated[str, typer.Option("--definition", help="Definition key.")],
    node: Annotated[str, typer.Option("--node", help="The node the instances are stuck at.")],
    stuck_minutes: Annotated[int, typer.Option("--stuck-minutes", min=0)],
    reason: Annotated[str, typer.Option("--reason", help="Why (required, audited).")],
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Preview; change nothing.")] = False,
    rate: js.PacedRateOpt = None,
) -> None:
    """Skip the task at NODE of every stuck instance and advance (SPEC O-6)."""

    async def main() -> None:
        async with engine_session() as engine:
            sel = RecoverySelection(
                definition_key=definition, node_key=node, stuck_minutes=stuck_minutes
            )
            try:
                result = await batch_recover(
                    engine,
                    sel,
                    reason=reason,
                    actor=ACTOR,
                    dry_run=dry_run,
                    rate=rate,
                    max_seconds=None,  # a terminal can wait
                )
            except FlowledgerError as exc:
                raise _fail(exc) from exc
            if not dry_run:
                await _audit(
                    engine,
                    "instance.batch_recover",
                    "definition",
                    definition,
                    reason,
                    {
                        "nodeKey": node,
                        "stuckMinutes": stuck_minutes,
                        "totals": result["totals"],
                        **({"rate": rate} if rate is not None else {}),
                    },
                )
                for item in result["results"]:
                    if item["outcome"] == "advanced":
                        await _audit(
                            engine,
                            "instance.recover",
                            "instance",
                            str(item["instanceId"]),
                            reason,
                            {"nodeKey": node},
                        )
        table = Table(
            "instance", "outcome", "detail", title="dry run" if dry_run else "batch recovery"
        )
        for item in result["results"]:
            if item["outcome"] == "advanced":
                detail = "→ " + ", ".join(item["toNodes"])
            elif item["outcome"] == "failed":
                detail = f"{item['error']['code']}: {item['error']['message']}"
            else:
                detail = item["reason"]
            table.add_row(str(item["instanceId"]), item["outcome"], detail)
        out.print(table)
        totals = result["totals"]
        out.print(
            f"selected={totals['selected']} advanced={totals['advanced']} "
            f"skipped={totals['skipped']} failed={totals['failed']}"
        )
        if dry_run and result["estimatedCompletion"] is not None:
            out.print(js.paced_estimate(result))

    run_async(main)
