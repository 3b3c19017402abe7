"""``flowledger`` commands. Each command parses options and calls lower
layers; no logic lives here.

- ``run``: everything in one process on the embedded SQLite (unless
  ``FLOWLEDGER_DATABASE_URL`` says otherwise): migrate, first-start admin
  token, demo data on an empty database, then API + worker + system tasks.
- ``serve``: the API only. ``worker``: the worker role only.
- ``migrate``, ``demo``, ``token create``, ``definitions …``, ``instances …``,
  ``jobs …`` (job ledger operations), ``alerts rules|events|silence``,
  ``pause-jobs`` / ``resume-jobs`` / ``paused-jobs`` (paused scopes).
  ``migrate-instances`` (issue 30).
"""

from __future__ import annotations

import asyncio
from types import MappingProxyType
from typing import Annotated

import typer

from flowledger.access.login_codes import LoginCodes
from flowledger.cli.common import console, open_database, runtime_session
from flowledger.cli.lazy import LazyCommand, lazy_group
from flowledger.cli.runtime import configure_logging, run_async, stop_on_signals
from flowledger.db.migrate import current_revision, upgrade
from flowledger.errors import FlowledgerError
from flowledger.ledger.types import parse_pools
from flowledger.runtime import Runtime, build_runtime
from flowledger.worker.supervisor import supervise
from flowledger.worker.worker import WorkerConfig

# Imported when called (flowledger/cli/lazy.py): a worker start does not load
# the API schemas these commands format their output with.
SUBCOMMANDS = MappingProxyType(
    {
        "definitions": LazyCommand("flowledger.cli.data:definitions_app"),
        "instances": LazyCommand("flowledger.cli.main:instances_group", loader=True),
        "token": LazyCommand("flowledger.cli.data:token_app"),
        "user": LazyCommand("flowledger.cli.users:user_app"),
        "jobs": LazyCommand("flowledger.cli.jobs:jobs_app"),
        "alerts": LazyCommand("flowledger.cli.alerts:alerts_app"),
        "demo": LazyCommand("flowledger.cli.data:demo"),
        "recover": LazyCommand("flowledger.cli.recovery:recover"),
        "migrate-instances": LazyCommand("flowledger.cli.migrate_instances:migrate_instances"),
        "health": LazyCommand("flowledger.cli.health:health"),
        "analytics": LazyCommand("flowledger.cli.analytics:analytics"),
        "retention": LazyCommand("flowledger.cli.analytics:retention_app"),
        "pause-jobs": LazyCommand("flowledger.cli.scope_ops:pause_jobs"),
        "resume-jobs": LazyCommand("flowledger.cli.scope_ops:resume_jobs"),
        "paused-jobs": LazyCommand("flowledger.cli.scope_ops:paused_jobs"),
        "batches": LazyCommand("flowledger.cli.batches:batches_app"),
    }
)

app = typer.Typer(
    cls=lazy_group(SUBCOMMANDS),
    no_args_is_help=True,
    help="flowledger: workflows on a durable job ledger.",
)


def instances_group() -> typer.Typer:
    """``instances …``: the data commands, the operations and the monitor list."""
    import flowledger.cli.instances_monitor  # noqa: F401  (registers `instances list`)
    from flowledger.cli.data import instances_app
    from flowledger.cli.instance_ops import register
    from flowledger.cli.scope_ops import register as register_scope_ops

    register(instances_app)
    register_scope_ops(instances_app)
    return instances_app


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


PoolOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--pool",
        help="A pool this worker runs, NAME=SLOTS (repeatable; built-in or user pool). "
        "Given, only these pools run (FLOWLEDGER_POOLS and the built-in slots are ignored).",
    ),
]


@app.command()
def worker(
    modules: ImportOpt = None,
    ledger_slots: Annotated[int | None, typer.Option(min=1)] = None,
    outbound_slots: Annotated[int | None, typer.Option(min=1)] = None,
    pool: PoolOpt = None,
) -> None:
    """Run a worker process: claims and executes jobs until SIGTERM."""
    configure_logging()
    pools = parse_pools(pool, field="--pool") if pool else None
    runtime = build_runtime(handler_modules=modules, pools=pools)
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
    from flowledger.cli.bootstrap import admin_exists
    from flowledger.cli.serve import serve_api

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
    from flowledger.cli.bootstrap import ensure_admin, is_empty, load_demo_data
    from flowledger.cli.serve import serve_api

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
    from flowledger.cli.bootstrap import ADMIN
    from flowledger.cli.serve import console_login_url

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
