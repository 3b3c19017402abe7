"""``flowledger alerts …`` (SPEC O-22): ``rules`` (the rules with their
state and last value), ``events`` (firing / resolved transitions, newest
first) and ``silence`` (create one; ``--list`` the silences, ``--expire ID``
end one). Tables go to stdout; ``--json`` prints the REST API's shapes. The
silence mutations are audited like the API's (``alert_silence.create``,
``alert_silence.expire``; actor ``--actor``, default ``cli``). Reads see
every tenant. The logic lives in :mod:`flowledger.ops.alerts`.
"""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from flowledger.api.alert_schemas import EventPublic, RulePublic, SilencePublic
from flowledger.cli import jobs_support as js
from flowledger.cli.common import console, out
from flowledger.engine import Engine
from flowledger.ops.alerts import changes, queries, rules, silences
from flowledger.ops.alerts.changes import SilenceRequest

alerts_app = typer.Typer(no_args_is_help=True, help="Alert rules, events and silences.")

LimitOpt = Annotated[int, typer.Option(min=1, max=200)]
ActorOpt = Annotated[str, typer.Option(help="Who is acting (audit).")]


def _value(value: float | None) -> str:
    return "—" if value is None else f"{value:g}"


@alerts_app.command("rules")
def list_rules(limit: LimitOpt = 50, as_json: js.JsonOpt = False) -> None:
    """Alert rules with their state (ok, pending, firing, resolved)."""

    async def main(engine: Engine) -> None:
        async with engine.db.read() as conn:
            items, _ = await rules.list_rules(conn, tenants=None, limit=limit)
        public = [RulePublic.from_row(r) for r in items]
        if as_json:
            js.print_json({"items": [p.model_dump(by_alias=True) for p in public]})
            return
        table = Table(
            "id",
            "tenant",
            "name",
            "condition",
            "for",
            "severity",
            "state",
            "value",
            title="alert rules",
        )
        for rule in public:
            table.add_row(
                str(rule.id),
                rule.tenant or "*",
                rule.name,
                f"{rule.metric} {rule.comparison} {rule.threshold:g}",
                rule.for_,
                rule.severity,
                rule.state if rule.enabled else "disabled",
                _value(rule.last_value),
            )
        out.print(table)

    js.run_command(as_json, main)


@alerts_app.command("events")
def list_events(
    rule: Annotated[int | None, typer.Option(min=1, help="Only this rule's events.")] = None,
    limit: LimitOpt = 50,
    as_json: js.JsonOpt = False,
) -> None:
    """Firing and resolved events, newest first, with the deciding value."""

    async def main(engine: Engine) -> None:
        async with engine.db.read() as conn:
            items, _ = await queries.list_events(conn, tenants=None, rule_id=rule, limit=limit)
        public = [EventPublic.from_row(r) for r in items]
        if as_json:
            js.print_json({"items": [p.model_dump(by_alias=True) for p in public]})
            return
        table = Table(
            "id",
            "at",
            "rule",
            "tenant",
            "kind",
            "value",
            "severity",
            "notified",
            title="alert events",
        )
        for event in public:
            notified = (
                "silenced"
                if event.silenced and not event.notified_at
                else js.text(event.notified_at)
            )
            table.add_row(
                str(event.id),
                js.text(event.occurred_at),
                f"#{event.rule_id} {event.rule_name}",
                event.tenant or "*",
                event.kind,
                _value(event.value),
                event.severity,
                notified,
            )
        out.print(table)

    js.run_command(as_json, main)


@alerts_app.command("silence")
def silence(
    rule: Annotated[int | None, typer.Option(min=1, help="Match this rule.")] = None,
    metric: Annotated[str | None, typer.Option(help="Match rules on this metric.")] = None,
    tenant: Annotated[str | None, typer.Option(help="Match this tenant's rules.")] = None,
    duration: Annotated[str, typer.Option(help="How long: '2h', '30m', 'PT1H'.")] = "1h",
    comment: Annotated[str | None, typer.Option(help="Why (required to create).")] = None,
    list_: Annotated[bool, typer.Option("--list", help="List the silences instead.")] = False,
    expire: Annotated[int | None, typer.Option(min=1, help="End this silence now.")] = None,
    actor: ActorOpt = "cli",
    as_json: js.JsonOpt = False,
) -> None:
    """Silence matching rules' notifications for a while (or --list, --expire)."""

    async def main(engine: Engine) -> None:
        now = engine.clock.now()
        if list_:
            async with engine.db.read() as conn:
                items, _ = await silences.list_silences(conn, tenants=None, now=now)
            shown = [SilencePublic.from_row(r, now) for r in items]
            if as_json:
                js.print_json({"items": [s.model_dump(by_alias=True) for s in shown]})
                return
            table = Table(
                "id",
                "state",
                "rule",
                "metric",
                "tenant",
                "ends",
                "by",
                "comment",
                title="alert silences",
            )
            for s in shown:
                m = s.matcher
                table.add_row(
                    str(s.id),
                    s.state,
                    js.text(m.rule_id),
                    m.metric or "",
                    m.tenant or "*",
                    js.text(s.ends_at),
                    s.created_by,
                    s.comment,
                )
            out.print(table)
            return
        ctx, caller = js.operator(engine, actor)
        if expire is not None:
            row = await changes.expire_silence(ctx, caller, expire, now=now)
        else:
            if not comment:
                raise silences.AlertSilenceInvalid("--comment is required", field="comment")
            request = SilenceRequest(
                rule_id=rule,
                metric=metric,
                tenant=tenant,
                starts_at=now,
                duration=duration,
                comment=comment,
            )
            asked = {"rule": rule, "metric": metric, "tenant": tenant, "duration": duration}
            row = await changes.create_silence(ctx, caller, request, shown=asked)
        public = SilencePublic.from_row(row, now)
        if as_json:
            js.print_json(public.model_dump(by_alias=True))
            return
        console.print(f"silence {public.id}: {public.state} until {js.text(public.ends_at)}")

    js.run_command(as_json, main)
