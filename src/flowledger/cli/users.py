"""``flowledger user …``: the users' data a deadline's escalation reads
(issue 31 item 4): ``user set-manager USER MANAGER`` (or ``--clear``)."""

from __future__ import annotations

from typing import Annotated

import typer

from flowledger.access.managers import set_manager
from flowledger.cli.common import console, engine_session, out
from flowledger.cli.runtime import run_async
from flowledger.errors import FlowledgerError

user_app = typer.Typer(no_args_is_help=True, help="Users.")


@user_app.command("set-manager")
def user_set_manager(
    user: Annotated[str, typer.Argument(help="The user whose manager is set.")],
    manager: Annotated[str | None, typer.Argument(help="The manager's user id.")] = None,
    clear: Annotated[bool, typer.Option("--clear", help="Remove the user's manager.")] = False,
) -> None:
    """Set whom a deadline's ``transfer`` to ``manager`` hands USER's tasks to."""
    if (manager is None) == (not clear):
        console.print("[red]give a MANAGER or --clear (not both)[/red]")
        raise typer.Exit(2)

    async def main() -> None:
        async with engine_session() as engine, engine.db.begin() as conn:
            await set_manager(conn, user, None if clear else manager)

    try:
        run_async(main)
    except FlowledgerError as exc:
        console.print(f"[red]{exc.code}[/red] {exc.message}")
        raise typer.Exit(1) from exc
    out.print(f"{user}: manager {'cleared' if clear else manager}")
