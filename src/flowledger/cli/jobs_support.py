"""Shared pieces of ``flowledger jobs …`` (:mod:`flowledger.cli.jobs`): the
common options, JSON and table rendering, the operator identity the CLI acts
as, and running a command so that a flowledger error becomes exit code 2
(with ``--json``: ``{"code", "message", "field"}`` on stdout)."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any

import typer
from fastapi.encoders import jsonable_encoder
from rich.table import Table

from flowledger.access.callers import Caller
from flowledger.access.permissions import ALL_PERMISSIONS
from flowledger.cli.common import console, engine_session
from flowledger.cli.runtime import run_async
from flowledger.db.database import Database
from flowledger.engine import Engine
from flowledger.errors import FlowledgerError
from flowledger.ops.jobs.filters import JobFilter

JsonOpt = Annotated[bool, typer.Option("--json", help="One JSON document on stdout.")]
ActorOpt = Annotated[str, typer.Option("--actor", help="Operator named in the audit.")]
ReasonOpt = Annotated[str | None, typer.Option("--reason", help="Why (kept in the audit).")]
TypesOpt = Annotated[list[str] | None, typer.Option("--type", "-t", help="Job type (repeatable).")]
StatusesOpt = Annotated[
    list[str] | None, typer.Option("--status", "-s", help="Job status (repeatable).")
]
InstanceOpt = Annotated[int | None, typer.Option("--instance", help="Instance id.")]
TraceOpt = Annotated[str | None, typer.Option("--trace", help="traceId.")]
KeywordOpt = Annotated[str | None, typer.Option("--keyword", "-k", help="Text in the error.")]
FingerprintOpt = Annotated[
    str | None, typer.Option("--fingerprint", help="A failure cluster's fingerprint.")
]
RateOpt = Annotated[
    int, typer.Option("--rate", min=1, max=200, help="Jobs released per second (1-200).")
]
PacedRateOpt = Annotated[
    int | None,
    typer.Option(
        "--rate",
        min=1,
        max=200,
        help="Instances acted on per second (1-200); default: all at once.",
    ),
]
IdsArg = Annotated[list[int], typer.Argument(help="Job ids (several: a batch).", min=1)]


# ------------------------------------------------------------------ helpers


def print_json(data: Any) -> None:
    print(json.dumps(jsonable_encoder(data), ensure_ascii=False, indent=2), flush=True)


def paced_estimate(doc: dict[str, Any]) -> str:
    """How long a run at a dry run's ``rate`` takes (its ``estimatedCompletion``)."""
    window = doc["estimatedCompletion"]
    seconds = (window["to"] - window["from"]).total_seconds()
    return f"at {doc['rate']} per second a run takes about {seconds:g} s"


def text(value: Any, width: int | None = None) -> str:
    if value is None:
        return ""
    shown = value.isoformat(timespec="seconds") if isinstance(value, datetime) else str(value)
    return shown if width is None or len(shown) <= width else shown[: width - 1] + "…"


def run_command(as_json: bool, main: Callable[[Engine], Awaitable[None]]) -> None:
    """Run ``main`` with an engine on the configured database; a flowledger
    error becomes exit code 2 (and a JSON error body with ``--json``)."""

    async def wrapped() -> None:
        async with engine_session() as engine:
            await main(engine)

    try:
        run_async(wrapped)
    except FlowledgerError as exc:
        if as_json:
            print_json({"code": exc.code, "message": exc.message, "field": exc.field})
        console.print(f"[red]error[/red] ({exc.code}): {exc.message}")
        raise typer.Exit(2) from exc


@dataclass(frozen=True)
class OperatorContext:
    """What an operator command audits through (an
    :class:`~flowledger.access.audit.AuditContext`): the engine's database
    and clock."""

    engine: Engine

    @property
    def db(self) -> Database:
        return self.engine.db

    def now(self) -> datetime:
        return self.engine.clock.now()


def operator(engine: Engine, actor: str) -> tuple[OperatorContext, Caller]:
    caller = Caller(
        user_id=actor,
        display_name=actor,
        roles=("cli",),
        permissions=frozenset(ALL_PERMISSIONS),
        tenants=("*",),
    )
    return OperatorContext(engine), caller


def job_filter(
    types: list[str] | None = None,
    statuses: list[str] | None = None,
    instance: int | None = None,
    trace: str | None = None,
    keyword: str | None = None,
    fingerprint: str | None = None,
    before: datetime | None = None,
) -> JobFilter:
    return JobFilter(
        types=tuple(types) if types else None,
        statuses=tuple(statuses) if statuses else None,
        instance_id=instance,
        trace_id=trace,
        keyword=keyword,
        fingerprint=fingerprint,
        enqueued_before=before,
    )


def jobs_table(rows: list[dict[str, Any]], title: str | None = None) -> Table:
    table = Table("id", "type", "status", "gen", "attempts", "run at", "last error", title=title)
    for r in rows:
        table.add_row(
            str(r["id"]),
            r["type"],
            r["status"],
            text(r.get("generation")),
            f"{r.get('attempts')}/{r.get('maxAttempts')}",
            text(r.get("runAt")),
            text(r.get("lastError"), 60),
        )
    return table


def flat(data: dict[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    rows: list[tuple[str, Any]] = []
    for key, value in data.items():
        if isinstance(value, dict):
            rows.extend(flat(value, f"{prefix}{key}."))
        else:
            rows.append((f"{prefix}{key}", value))
    return rows
