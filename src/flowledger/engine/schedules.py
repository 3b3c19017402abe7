"""Schedules (SPEC E-9): a cron rule that starts instances of a definition.

The planner (a periodic service, run by workers) turns each due fire time
into one ``schedule_launch`` job whose idempotencyKey is ``schedule:<id>:<fire
time>`` — so two workers planning the same tick create one job, and the
launch handler's step receipt makes a retried launch start one instance.
A manual launch enqueues a launch job with a key of its own.

A cron rule has exactly five fields (minute hour day month weekday; a sixth
would be read as seconds and launch on every planner tick) and its fires are
at least ``schedule_min_period_s`` apart (default 60 s; the engine's
settings), checked over the
next ``PERIOD_SAMPLES`` fires at creation (issue 17 item 9). A rule that
is well formed but names no date (``0 0 30 2 *``) never fires: it is refused
as ``schedule_invalid``, field ``cron`` (issue 31 item 6)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import CroniterError, croniter
from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db.engine_schema import workflow_schedules
from flowledger.engine.job_types import SCHEDULE_LAUNCH
from flowledger.errors import FlowledgerError, NotFoundError
from flowledger.ledger.driver.protocol import LedgerDriver
from flowledger.ledger.models import JobSpec


class ScheduleInvalid(FlowledgerError):
    code = "schedule_invalid"


PERIOD_SAMPLES = 24


def check_cron(cron: str, tz: str, now: datetime, *, min_period_s: int) -> None:
    """ScheduleInvalid (field ``cron``) unless five fields fire at most once
    every ``min_period_s`` seconds."""
    fields = cron.split()
    if len(fields) != 5:
        raise ScheduleInvalid(
            f"a cron rule has five fields (minute hour day month weekday), got {len(fields)}",
            field="cron",
        )
    previous = next_fire(cron, tz, now)
    minimum = min_period_s
    for _ in range(PERIOD_SAMPLES):
        fire = next_fire(cron, tz, previous)
        if (fire - previous).total_seconds() < minimum:
            raise ScheduleInvalid(
                f"the rule fires {int((fire - previous).total_seconds())} s apart; "
                f"the minimum period is {minimum} s",
                field="cron",
            )
        previous = fire


def next_fire(cron: str, tz: str, after: datetime) -> datetime:
    try:
        zone = ZoneInfo(tz)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ScheduleInvalid(f"unknown time zone {tz!r}", field="timezone") from exc
    if not croniter.is_valid(cron):
        raise ScheduleInvalid(f"not a cron expression: {cron!r}", field="cron")
    local = after.astimezone(zone)
    try:
        fire: datetime = croniter(cron, local).get_next(datetime)
    except (CroniterError, OverflowError) as exc:  # 30 February: valid, never due
        raise ScheduleInvalid(
            f"the rule {cron!r} never fires (no such date: {exc})", field="cron"
        ) from None
    return fire.astimezone(after.tzinfo)


async def create_schedule(
    conn: AsyncConnection,
    *,
    tenant: str,
    name: str,
    definition_key: str,
    cron: str,
    timezone: str,
    form: dict[str, Any],
    initiator: str,
    now: datetime,
    min_period_s: int,
    enabled: bool = True,
) -> int:
    check_cron(cron, timezone, now, min_period_s=min_period_s)
    first = next_fire(cron, timezone, now)
    return int(
        (
            await conn.execute(
                workflow_schedules.insert()
                .values(
                    tenant_id=tenant,
                    name=name,
                    definition_key=definition_key,
                    cron=cron,
                    timezone=timezone,
                    form=form,
                    initiator=initiator,
                    enabled=enabled,
                    next_run_at=first,
                    created_at=now,
                )
                .returning(workflow_schedules.c.id)
            )
        ).scalar_one()
    )


async def get_schedule(
    conn: AsyncConnection,
    schedule_id: int,
    *,
    tenants: list[str] | None = None,
    lock: bool = False,
) -> dict[str, Any]:
    query = select(workflow_schedules).where(workflow_schedules.c.id == schedule_id)
    if tenants is not None:
        query = query.where(workflow_schedules.c.tenant_id.in_(tenants))
    if lock:
        query = query.with_for_update()
    row = (await conn.execute(query)).mappings().first()
    if row is None:
        raise NotFoundError(f"schedule {schedule_id} not found", field="scheduleId")
    return dict(row)


async def set_enabled(
    conn: AsyncConnection,
    schedule_id: int,
    enabled: bool,
    *,
    now: datetime,
    tenants: list[str] | None = None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Turn a schedule on or off (the row locked while it changes); the row
    before and after. Off, the planner passes it by and a launch it planned
    earlier finds it off and starts nothing (a manual launch still runs).
    Back on, it fires next at the rule's first time after ``now``: the fire
    times missed while it was off are not made up. Setting what is already
    set changes nothing."""
    before = await get_schedule(conn, schedule_id, tenants=tenants, lock=True)
    if before["enabled"] == enabled:
        return before, before
    values: dict[str, Any] = {"enabled": enabled}
    if enabled:
        values["next_run_at"] = next_fire(before["cron"], before["timezone"], now)
    await conn.execute(
        update(workflow_schedules).where(workflow_schedules.c.id == schedule_id).values(**values)
    )
    return before, {**before, **values}


async def launch_manually(
    conn: AsyncConnection, schedule: dict[str, Any], *, now: datetime, ledger: LedgerDriver
) -> int:
    result = await ledger.job_insert(
        conn,
        JobSpec(
            type=SCHEDULE_LAUNCH,
            payload={"scheduleId": schedule["id"], "fireAt": now.isoformat(), "manual": True},
            tenant_id=schedule["tenant_id"],
            idempotency_key=f"schedule:{schedule['id']}:manual:{uuid.uuid4().hex}",
        ),
        now=now,
    )
    return result.job_id


async def plan_due(
    conn: AsyncConnection, *, now: datetime, ledger: LedgerDriver, limit: int = 100
) -> list[int]:
    """Enqueue (through ``ledger``) a launch job for every due fire time and
    move the schedules on."""
    rows = (
        (
            await conn.execute(
                select(workflow_schedules)
                .where(
                    workflow_schedules.c.enabled.is_(True), workflow_schedules.c.next_run_at <= now
                )
                .order_by(workflow_schedules.c.next_run_at)
                .limit(limit)
                .with_for_update(skip_locked=True)
            )
        )
        .mappings()
        .all()
    )
    jobs = []
    for row in rows:
        fire_at = row["next_run_at"]
        job = await ledger.job_insert(
            conn,
            JobSpec(
                type=SCHEDULE_LAUNCH,
                payload={"scheduleId": row["id"], "fireAt": fire_at.isoformat(), "manual": False},
                tenant_id=row["tenant_id"],
                run_at=fire_at,
                idempotency_key=f"schedule:{row['id']}:{fire_at.isoformat()}",
            ),
            now=now,
        )
        if job.created:
            jobs.append(job.job_id)
        await conn.execute(
            update(workflow_schedules)
            .where(workflow_schedules.c.id == row["id"])
            .values(next_run_at=next_fire(row["cron"], row["timezone"], now), last_run_at=fire_at)
        )
    return jobs
