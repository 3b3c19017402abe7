"""``flowledger health [--threshold 30m] [--rule R]``: the health inspection
(SPEC O-16) from a terminal, cron or a readiness probe. A rich table of the
problems (critical first, oldest first) and the counts and score go to
stdout (``--json``: the REST document instead — ``now``, the items with
their ``messageParams`` and ``recoveryAction``, the summary with the score);
the exit code is 1 when any
critical problem is listed, 0 otherwise, and 2 on bad input. Every tenant,
by the database's clock. No logic lives here: it calls :mod:`flowledger.ops`.
"""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Annotated

import typer
from pydantic.alias_generators import to_camel
from rich.table import Table

from flowledger.cli import jobs_support as js
from flowledger.cli.common import out
from flowledger.engine import Engine
from flowledger.errors import FlowledgerError
from flowledger.ops.health import inspection
from flowledger.ops.health.messages import age, describe, problem_fields
from flowledger.ops.health.rules import CRITICAL, RULE_CODES
from flowledger.ops.health.score import health_score_of
from flowledger.ops.runtime.status import runtime_figures

_UNITS = {"m": 1, "h": 60, "d": 1440}


class BadOption(FlowledgerError):
    code = "invalid_option"


def parse_threshold(text: str) -> timedelta:
    """``30m``, ``2h``, ``1d`` or a number of minutes, from 10 min to 1 day."""
    found = re.fullmatch(r"\s*(\d{1,5})\s*([mhd]?)\s*", text.lower())
    if found is None:
        raise BadOption(f"--threshold {text!r} is not like 30m, 2h or 1d", field="threshold")
    minutes = int(found.group(1)) * _UNITS[found.group(2) or "m"]
    low, high = inspection.MIN_THRESHOLD_MINUTES, inspection.MAX_THRESHOLD_MINUTES
    if not low <= minutes <= high:
        raise BadOption(f"--threshold must be from {low}m to {high // 60}h", field="threshold")
    return timedelta(minutes=minutes)


def health(
    threshold: Annotated[str, typer.Option(help="10m … 1d (default 30m).")] = "30m",
    rule: Annotated[str | None, typer.Option(help="Only this rule.")] = None,
    limit: Annotated[int, typer.Option(min=1, max=10_000, help="Rows shown.")] = 200,
    as_json: js.JsonOpt = False,
) -> None:
    """The health inspection; exit code 1 when any critical problem exists."""
    window = parse_threshold(threshold)
    if rule is not None and rule not in RULE_CODES:
        raise BadOption(f"unknown rule {rule!r}; one of {', '.join(RULE_CODES)}", field="rule")
    critical = False

    async def main(engine: Engine) -> None:
        nonlocal critical
        now = await engine.db.now()
        async with engine.db.read() as conn:
            problems = await inspection.inspect(conn, now=now, threshold=window)
            runtime = await runtime_figures(conn, now)
        shown, _ = inspection.page(problems, rule=rule, limit=len(problems) + 1)
        critical = any(p.level == CRITICAL for p in shown)
        summary = inspection.summarize(problems)
        score = health_score_of(problems, runtime).score
        if as_json:
            items = [
                {to_camel(k): v for k, v in problem_fields(p, now).items()} for p in shown[:limit]
            ]
            js.print_json({"now": now, "items": items, "summary": {**summary, "score": score}})
            return
        table = Table(
            "level",
            "rule",
            "instance",
            "task",
            "node",
            "job",
            "for",
            "message",
            "suggestion",
            title=f"health inspection (threshold {int(window.total_seconds() // 60)} min)",
        )
        for p in shown[:limit]:
            message, suggestion = describe(p, now)
            style = "red" if p.level == CRITICAL else "yellow"
            table.add_row(
                f"[{style}]{p.level}[/{style}]",
                p.rule,
                *(
                    "—" if v is None else str(v)
                    for v in (p.instance_id, p.task_id, p.node_key, p.job_id)
                ),
                age(p.since, now),
                message,
                suggestion,
            )
        out.print(table)
        counts = ", ".join(f"{k} {v}" for k, v in summary["byRule"].items() if v)
        out.print(
            f"score {score}/100 · critical {summary['byLevel']['critical']} · "
            f"warning {summary['byLevel']['warning']}" + (f" · {counts}" if counts else "")
        )

    js.run_command(as_json, main)
    if critical:
        raise typer.Exit(1)
