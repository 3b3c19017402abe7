"""Shared pieces of the alerting tests (SPEC O-22): a real SMTP server
(aiosmtpd) configured as the process's SMTP settings, rules written through
:mod:`flowledger.ops.alerts.rules`, dead jobs as the metric's data, and a
``tick`` that moves the ManualClock, runs one evaluator pass and then every
due job through the real handlers (claim → handler → settle)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select, update

from flowledger.clock import ManualClock
from flowledger.db.alert_schema import workflow_alert_events, workflow_alert_rules
from flowledger.db.database import Database
from flowledger.db.schema import workflow_jobs
from flowledger.ops.alerts.evaluator import ALERT_NOTIFICATION, EvaluationSummary, evaluate_once
from flowledger.ops.alerts.rules import RuleFields, create_rule
from tests.integration.engine_helpers import run_due_jobs
from tests.ledger_access import ledger_of
from tests.ops.rows import add_job
from tests.runtime_support import process_secrets


async def rule(
    db: Database,
    clock: ManualClock,
    *,
    tenant: str | None = "acme",
    metric: str = "dead_letters",
    comparison: str = "gt",
    threshold: float = 0,
    for_seconds: int | str = 300,
    email: list[str] | None = None,
    webhook: str | None = None,
    secret: str | None = None,
    in_app: list[str] | None = None,
    severity: str = "critical",
) -> int:
    async with db.begin() as conn:
        row, _ = await create_rule(
            conn,
            tenant=tenant,
            fields=RuleFields(
                name="dead letters pile up",
                metric=metric,
                comparison=comparison,
                threshold=threshold,
                for_seconds=for_seconds,  # type: ignore[arg-type]
                severity=severity,
                email_to=email or [],
                webhook_url=webhook,
                webhook_secret=secret,
                in_app_users=in_app or [],
            ),
            actor="test",
            now=clock.now(),
            box=process_secrets(),
        )
    return int(row["id"])


async def dead_job(db: Database, clock: ManualClock, tenant: str = "acme") -> int:
    return await add_job(db, clock.now(), status="dead", tenant_id=tenant, last_error="boom")


async def set_job(db: Database, job_id: int, **values: Any) -> None:
    async with db.begin() as conn:
        await conn.execute(
            update(workflow_jobs).where(workflow_jobs.c.id == job_id).values(**values)
        )


async def tick(db: Database, clock: ManualClock, *, minutes: float = 1) -> EvaluationSummary:
    """Move time, evaluate once, run every due job."""
    clock.advance(seconds=minutes * 60)
    summary = await evaluate_once(db, clock, ledger=ledger_of(db))
    await run_due_jobs(db, clock)
    return summary


async def alert_events(db: Database, rule_id: int | None = None) -> list[dict[str, Any]]:
    query = select(workflow_alert_events).order_by(workflow_alert_events.c.id)
    if rule_id is not None:
        query = query.where(workflow_alert_events.c.rule_id == rule_id)
    async with db.read() as conn:
        return [dict(r) for r in (await conn.execute(query)).mappings()]


async def rule_row(db: Database, rule_id: int) -> dict[str, Any]:
    async with db.read() as conn:
        query = select(workflow_alert_rules).where(workflow_alert_rules.c.id == rule_id)
        return dict((await conn.execute(query)).mappings().one())


async def notification_jobs(db: Database) -> list[dict[str, Any]]:
    query = (
        select(workflow_jobs)
        .where(workflow_jobs.c.type == ALERT_NOTIFICATION)
        .order_by(workflow_jobs.c.id)
    )
    async with db.read() as conn:
        return [dict(r) for r in (await conn.execute(query)).mappings()]
