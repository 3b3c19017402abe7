"""``flowledger`` commands. Each command parses options and calls lower
layers; no logic lives here.

- ``run``: everything in one process on the embedded SQLite (unless
  ``FLOWLEDGER_DATABASE_URL`` says otherwise): migrate, first-start admin
  token, demo data on an empty database, then API + worker + system tasks.
- ``serve``: the API only. ``worker``: the worker role only.
- ``migrate``, ``demo``, ``token create``, ``definitions …``, ``instances …``,
  ``jobs …`` (job ledger operations), ``alerts rules|events|silence``.
"""

from __future__ import annotations

import asyncio
from typing import Annotated

import typer

from flowledger.access.login_codes import LoginCodes
from flowledger.cli.alerts import alerts_app
from flowledger.cli.analytics import analytics, retention_app
from flowledger.cli.bootstrap import ADMIN, admin_exists, ensure_admin, is_empty, load_demo_data
from flowledger.cli.common import console, open_database, runtime_session
from flowledger.cli.data import definitions_app, demo, instances_app, token_app
from flowledger.cli.health import health
from flowledger.cli.instance_ops import register as register_instance_ops
from flowledger.cli.instances_monitor import instances_list as _instances_list  # noqa: F401
from flowledger.cli.jobs import jobs_app
from flowledger.cli.recovery import recover
from flowledger.cli.runtime import configure_logging, run_async, stop_on_signals
from flowledger.cli.serve import console_login_url, serve_api
from flowledger.db.migrate import current_revision, upgrade
from flowledger.errors import FlowledgerError
from flowledger.runtime import Runtime, build_runtime
from flowledger.worker.supervisor import supervise
from flowledger.worker.worker import WorkerConfig

app = typer.Typer(no_args_is_help=True, help="flowledger: workflows on a durable job ledger.")
app.add_typer(definitions_app, name="definitions")
app.add_typer(instances_app, name="instances")
app.add_typer(token_app, name="token")
app.add_typer(jobs_app, name="jobs")
app.add_typer(alerts_app, name="alerts")
app.command()(demo)
app.command()(recover)
register_instance_ops(instances_app)
app.command()(health)
app.command("analytics")(analytics)
app.add_typer(retention_app, name="retention")

ImportOpt = Annotated[
    list[str] | None,
    typer.Option("--import", "-i", help="Module that registers job handlers (repeatable)."),
]
HostOpt = Annotated[str, typer.Option(help="Address the API listens on.")]
PortOpt = Annotated[int, typer.Option(help="Port the API listens on.")]


@app.command()
def migrate() -> None:
    """Create or upgrade the database schema."""

    async def main() -> None:
        db = open_database()
        try:
            await upgrade(db)
            console.print(f"schema at revision [bold]{await current_revision(db)}[/bold]")
        finally:
            await db.dispose()

    run_async(main)


def _worker_config(
    runtime: Runtime, ledger_slots: int | None, outbound_slots: int | None
) -> WorkerConfig:
    config = runtime.worker_config
    pools = dict(config.pools)
    if ledger_slots is not None:
        pools["workflow-ledger"] = ledger_slots
    if outbound_slots is not None:
        pools["workflow-ledger-outbound"] = outbound_slots
    return WorkerConfig(**{**config.__dict__, "pools": pools})


@app.command()
def worker(
    modules: ImportOpt = None,
    ledger_slots: Annotated[int | None, typer.Option(min=1)] = None,
    outbound_slots: Annotated[int | None, typer.Option(min=1)] = None,
) -> None:
    """Run a worker process: claims and executes jobs until SIGTERM."""
    configure_logging()
    runtime = build_runtime(handler_modules=modules)
    config = _worker_config(runtime, ledger_slots, outbound_slots)

    async def main() -> None:
        try:
            await runtime.worker(config).run(stop_on_signals())
        finally:
            await runtime.aclose()
            await runtime.db.dispose()

    run_async(main)


@app.command()
def serve(host: HostOpt = "127.0.0.1", port: PortOpt = 8000) -> None:
    """Run the HTTP API only (no worker)."""
    configure_logging()

    async def main() -> None:
        async with runtime_session() as runtime:
            console.print(f"flowledger API on http://{host}:{port}/api/docs")
            if await admin_exists(runtime.db):
                _print_console_url(host, port, runtime.login_codes)
            await serve_api(runtime, host=host, port=port, stop=stop_on_signals())

    run_async(main)


@app.command()
def run(
    modules: ImportOpt = None,
    host: HostOpt = "127.0.0.1",
    port: PortOpt = 8000,
    demo_data: Annotated[
        bool, typer.Option("--demo/--no-demo", help="Load the demo into an empty database.")
    ] = True,
) -> None:
    """Everything in one process: API, worker and system tasks."""
    configure_logging()

    async def main() -> None:
        async with runtime_session(handler_modules=modules) as runtime:
            engine, db, settings = runtime.engine, runtime.db, runtime.settings
            token = await ensure_admin(db, engine)
            if demo_data and await is_empty(db):
                report = await load_demo_data(db, engine, progress=console.print)
                console.print(
                    f"demo: {report.definitions} definitions, {len(report.instances)} instances"
                )
            console.print(f"flowledger on {settings.database_url}")
            console.print(
                f"API: http://{host}:{port}/api/workflows  (docs: http://{host}:{port}/api/docs)"
            )
            if token is not None:
                console.print(
                    "admin token (shown once; `flowledger token create --user "
                    "admin` issues another):"
                )
                print(token, flush=True)
            _print_console_url(host, port, runtime.login_codes)
            worker = runtime.worker()

            async def api(stop: asyncio.Event) -> None:
                await serve_api(runtime, host=host, port=port, stop=stop)

            try:  # the API and the worker stop together (one dying stops both)
                await supervise(stop_on_signals(), {"api": api, "worker": worker.run})
            finally:
                await runtime.aclose()

    run_async(main)


def _print_console_url(host: str, port: int, codes: LoginCodes) -> None:
    console.print("web console, signed in as admin (the link works once, for 10 minutes):")
    print(console_login_url(host, port, ADMIN, codes), flush=True)


def main() -> None:
    try:
        app()
    except FlowledgerError as exc:
        console.print(f"[red]error[/red] ({exc.code}): {exc.message}")
        raise SystemExit(2) from exc


if __name__ == "__main__":
    main()
