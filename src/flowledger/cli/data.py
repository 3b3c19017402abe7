"""``flowledger definitions …``, ``instances start``, ``token create`` and
``demo``: thin commands over the engine and the API's user store (``instances
list | show | export``: :mod:`flowledger.cli.instances_monitor`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.progress import Progress, SpinnerColumn, TextColumn
from rich.table import Table
from sqlalchemy import select

from flowledger.access.permissions import ALL_PERMISSIONS
from flowledger.access.tokens import create_user, issue_token
from flowledger.cli.bootstrap import load_demo_data
from flowledger.cli.common import console, engine_session, out
from flowledger.cli.runtime import run_async
from flowledger.db.engine_schema import users, workflow_definitions
from flowledger.definitions.validate import DefinitionError
from flowledger.errors import FlowledgerError

definitions_app = typer.Typer(no_args_is_help=True, help="Deploy and list definitions.")
instances_app = typer.Typer(no_args_is_help=True, help="Start, list, show and export instances.")
token_app = typer.Typer(no_args_is_help=True, help="API tokens.")


@definitions_app.command("deploy")
def definitions_deploy(
    file: Annotated[Path, typer.Argument(exists=True, dir_okay=False, readable=True)],
    tenant: str = "default",
) -> None:
    """Validate and deploy a definition file (JSON or YAML) as a new version."""

    async def main() -> None:
        async with engine_session() as engine:
            try:
                row = await engine.deploy(
                    file.read_text(encoding="utf-8"), actor="cli", tenant=tenant
                )
            except DefinitionError as exc:
                table = Table("code", "node", "edge", "message", title=f"{file} is invalid")
                for p in exc.problems:
                    table.add_row(p.code, p.node or "", p.edge or "", p.message)
                console.print(table)
                raise typer.Exit(2) from exc
            out.print(f"deployed [bold]{row['key']}[/bold] version {row['version']}")

    run_async(main)


@definitions_app.command("list")
def definitions_list() -> None:
    """Every deployed definition version."""

    async def main() -> None:
        async with engine_session() as engine, engine.db.read() as conn:
            rows = (
                (
                    await conn.execute(
                        select(workflow_definitions).order_by(
                            workflow_definitions.c.key, workflow_definitions.c.version
                        )
                    )
                )
                .mappings()
                .all()
            )
        table = Table("tenant", "key", "version", "name", "deployed")
        for r in rows:
            table.add_row(
                r["tenant_id"],
                r["key"],
                str(r["version"]),
                r["name"],
                r["deployed_at"].isoformat(timespec="seconds"),
            )
        out.print(table)

    run_async(main)


@instances_app.command("start")
def instances_start(
    key: str,
    form: Annotated[str, typer.Option(help="Form data as a JSON object.")] = "{}",
    initiator: str = "cli",
    tenant: str = "default",
    version: int | None = None,
) -> None:
    """Start an instance; prints its id."""
    try:
        data = json.loads(form)
    except json.JSONDecodeError as exc:
        console.print(f"[red]--form is not JSON[/red]: {exc}")
        raise typer.Exit(2) from exc

    async def main() -> None:
        async with engine_session() as engine:
            out.print(
                await engine.start(
                    key, form=data, initiator=initiator, tenant=tenant, version=version
                )
            )

    run_async(main)


@token_app.command("create")
def token_create(
    user: Annotated[str, typer.Option("--user", help="User id (created if new).")],
    permission: Annotated[list[str] | None, typer.Option("--permission")] = None,
    tenant: Annotated[list[str] | None, typer.Option("--tenant")] = None,
) -> None:
    """Issue an API token and print it alone on stdout. A new user gets the
    given permissions (all of them when none are given) and tenants
    (``default`` when none are given); for an existing user the token is
    narrowed to the given ones."""
    unknown = sorted(set(permission or []) - set(ALL_PERMISSIONS))
    if unknown:
        console.print(
            f"[red]unknown permission[/red] {', '.join(unknown)}; "
            f"known: {', '.join(ALL_PERMISSIONS)}"
        )
        raise typer.Exit(2)

    async def main() -> None:
        async with engine_session() as engine, engine.db.begin() as conn:
            now = engine.clock.now()
            exists = (await conn.execute(select(users.c.id).where(users.c.id == user))).first()
            if exists is None:
                await create_user(
                    conn,
                    user,
                    permissions=permission or ALL_PERMISSIONS,
                    tenants=tenant or ["default"],
                    now=now,
                )
                token = await issue_token(conn, user, now=now)
            else:
                token = await issue_token(
                    conn, user, now=now, permissions=permission, tenants=tenant
                )
        print(token)

    run_async(main)


def demo() -> None:
    """Load the demo definitions, users and a realistic mix of instances."""

    async def main() -> None:
        async with engine_session() as engine:
            with Progress(
                SpinnerColumn(), TextColumn("{task.description}"), console=console
            ) as progress:
                task = progress.add_task("loading the demo", total=None)
                report = await load_demo_data(
                    engine.db, engine, progress=lambda m: progress.update(task, description=m)
                )
            out.print(
                f"demo loaded: {report.definitions} definitions, {len(report.instances)} instances"
            )

    try:
        run_async(main)
    except FlowledgerError as exc:
        console.print(f"[red]{exc.code}[/red]: {exc.message}")
        raise typer.Exit(2) from exc
