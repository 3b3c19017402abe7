"""``flowledger`` commands: ``migrate``, ``worker`` and ``run``. Commands only
parse options and call lower layers; they hold no logic of their own."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.console import Console

from flowledger.cli.runtime import configure_logging, run_async, stop_on_signals
from flowledger.db.database import Database
from flowledger.db.migrate import current_revision, upgrade
from flowledger.errors import FlowledgerError
from flowledger.settings import get_settings
from flowledger.worker.registry import import_handler_modules
from flowledger.worker.worker import Worker, WorkerConfig

app = typer.Typer(no_args_is_help=True, help="flowledger: workflows on a durable job ledger.")
console = Console(stderr=True)

ImportOpt = Annotated[
    list[str] | None,
    typer.Option("--import", "-i", help="Module that registers job handlers (repeatable)."),
]


def _database() -> Database:
    settings = get_settings()
    return Database(settings.database_url, pool_size=settings.db_pool_size)


@app.command()
def migrate() -> None:
    """Create or upgrade the database schema."""

    async def main() -> None:
        db = _database()
        try:
            await upgrade(db)
            console.print(f"schema at revision [bold]{await current_revision(db)}[/bold]")
        finally:
            await db.dispose()

    run_async(main)


async def _run_worker(
    modules: list[str], *, ledger_slots: int | None, outbound_slots: int | None, migrate_first: bool
) -> None:
    configure_logging()
    import_handler_modules(["flowledger.handlers", *modules])
    settings = get_settings()
    config = WorkerConfig.from_settings(settings)
    pools = dict(config.pools)
    if ledger_slots is not None:
        pools["workflow-ledger"] = ledger_slots
    if outbound_slots is not None:
        pools["workflow-ledger-outbound"] = outbound_slots
    config = WorkerConfig(**{**config.__dict__, "pools": pools})
    db = _database()
    try:
        if migrate_first:
            await upgrade(db)
        stop = stop_on_signals()
        await Worker(db, config).run(stop)
    finally:
        await db.dispose()


@app.command()
def worker(
    modules: ImportOpt = None,
    ledger_slots: Annotated[int | None, typer.Option(min=1)] = None,
    outbound_slots: Annotated[int | None, typer.Option(min=1)] = None,
) -> None:
    """Run a worker process: claims and executes jobs until SIGTERM."""
    run_async(
        lambda: _run_worker(
            modules or [],
            ledger_slots=ledger_slots,
            outbound_slots=outbound_slots,
            migrate_first=False,
        )
    )


@app.command()
def run(
    modules: ImportOpt = None,
    host: Annotated[
        str, typer.Option(help="Address of the API (arrives with the API).")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option()] = 8000,
) -> None:
    """Everything in one process on the embedded SQLite (unless
    FLOWLEDGER_DATABASE_URL says otherwise): migrate, then run the worker and
    the system tasks."""
    settings = get_settings()
    console.print(
        f"flowledger on [bold]{settings.database_url}[/bold] "
        f"(worker + system tasks; Ctrl-C to stop)"
    )
    run_async(
        lambda: _run_worker(
            modules or [], ledger_slots=None, outbound_slots=None, migrate_first=True
        )
    )


def main() -> None:
    try:
        app()
    except FlowledgerError as exc:
        console.print(f"[red]error[/red] ({exc.code}): {exc.message}")
        raise SystemExit(2) from exc


if __name__ == "__main__":
    main()
