"""Health inspection, health score and health history under
``/api/workflows/engine`` (SPEC O-16). Reads need
``workflow:instance:monitor`` (403 otherwise) and are never audited; the
inspection sees only the caller's tenants (A-3). Time is the engine's clock
(the clock that writes the engine's rows). The queries live in :mod:`flowledger.ops`.

- ``GET /engine/health-inspection?thresholdMinutes=T`` — T from 10 to 1440
  (default 30; outside: 422 on the field ``thresholdMinutes``); filters
  ``rule``, ``level``, ``definitionKey``; keyset paging (``limit``,
  ``cursor``); items ``{rule, level, instanceId, taskId, nodeKey, jobId,
  since, message, suggestion, messageParams, recoveryAction}`` (the
  message and suggestion are English; ``messageParams`` holds the values
  they are made of, for a client that words them by ``rule`` in its own
  language; ``recoveryAction`` is the targeted recovery action the
  suggestion names, or null: the repair is on the instance; ``repair
  {action, params}``: the repair itself, the same the instance drawer
  offers for the problem, O-12) and
  ``summary {byRule, byLevel, score}``.
- ``GET /engine/health-score`` — the score with its points and inputs.
- ``GET /engine/health-history?from&to`` — the snapshot series (default: the
  last 24 h; at most 31 days), at most one point per snapshot interval.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query
from pydantic import Field

from flowledger.api.auth import CurrentCaller
from flowledger.api.deps import Ctx
from flowledger.api.pagination import Cursor, Limit, cursor_for, decode_cursor
from flowledger.api.permissions import INSTANCE_MONITOR
from flowledger.api.route_access import GuardedRoute, allow
from flowledger.api.schemas import ApiModel, DefinitionKey, UtcTime
from flowledger.api.view_filters import HEALTH_RULES
from flowledger.errors import FlowledgerError
from flowledger.ops.health import inspection
from flowledger.ops.health.history import history
from flowledger.ops.health.messages import problem_fields
from flowledger.ops.health.page import problem_page
from flowledger.ops.health.score import engine_health_score, health_score_from_counts
from flowledger.ops.runtime.status import runtime_figures

# every route here is a read for monitors (SPEC A-2)
router = APIRouter(
    prefix="/engine",
    tags=["health"],
    route_class=GuardedRoute,
    dependencies=[allow(INSTANCE_MONITOR)],
)

# the inspection's rule codes, in one list (api/view_filters.py, checked against ops)
RuleCode = Literal[HEALTH_RULES]  # type: ignore[valid-type]
Level = Literal["critical", "warning"]
MAX_HISTORY = timedelta(days=31)


class InvalidQuery(FlowledgerError):
    code = "invalid_query"


class Repair(ApiModel):
    action: Literal["force_jump", "job_retry", "recovery", "remind", "replay"]
    params: dict[str, Any] = Field(
        description="force_jump: target (null: the operator picks the node); job_retry: "
        "jobId; recovery: action (POST /engine/recovery/{action}/…), jobId; remind: taskId, "
        "assignee; replay: the body of POST /engine/jobs/replay-dead (types, instanceId, "
        "statuses)."
    )


class HealthItem(ApiModel):
    rule: str
    level: str
    instance_id: int | None
    task_id: int | None
    node_key: str | None
    job_id: int | None
    since: datetime
    message: str = Field(description="What is wrong, in English (the CLI's words).")
    suggestion: str = Field(description="The repair to make, in English.")
    message_params: dict[str, str | int | bool | None] = Field(
        description="The values the message and suggestion are made of, for a client "
        "that words them itself by `rule`: per rule, a subset of nodeKey (null: the "
        "node is unknown), taskId, jobId, ageMinutes (whole minutes since `since` at "
        "`now`), errorCode (the failed job's last error code, else its status), "
        "outcomeUnconfirmed (true: the suggestion is to confirm the outcome with the "
        "receiver first, never to resend), jobStatus, childInstanceId (null: no child "
        "started), assignee, count (events, or failed webhook deliveries)."
    )
    recovery_action: str | None = Field(
        description="The targeted recovery action the suggestion names (POST "
        "/engine/recovery/{action}/…), or null when the repair is on the instance."
    )
    repair: Repair = Field(
        description="The repair, the same the instance drawer's conclusion of this "
        "problem offers (SPEC O-12)."
    )


class HealthSummary(ApiModel):
    by_rule: dict[str, int]
    by_level: dict[str, int]
    score: int


class HealthInspection(ApiModel):
    threshold_minutes: int
    now: datetime
    items: list[HealthItem]
    next: str | None
    summary: HealthSummary


class HealthScorePublic(ApiModel):
    score: int
    points: dict[str, int]
    inputs: dict[str, Any]


class HealthPoint(ApiModel):
    taken_at: datetime
    score: int
    by_rule: dict[str, int]
    by_level: dict[str, int]
    runtime: dict[str, Any]


class HealthHistory(ApiModel):
    interval_seconds: float = Field(description="At most one point per interval.")
    from_: datetime = Field(alias="from")
    to: datetime
    points: list[HealthPoint]


def _threshold(value: int) -> timedelta:
    low, high = inspection.MIN_THRESHOLD_MINUTES, inspection.MAX_THRESHOLD_MINUTES
    if not low <= value <= high:
        raise InvalidQuery(
            f"thresholdMinutes must be from {low} to {high}", field="thresholdMinutes"
        )
    return timedelta(minutes=value)


@router.get("/health-inspection", response_model=HealthInspection)
async def health_inspection(
    ctx: Ctx,
    caller: CurrentCaller,
    threshold_minutes: Annotated[
        int,
        Query(alias="thresholdMinutes", description="From 10 to 1440 minutes (default 30)."),
    ] = inspection.DEFAULT_THRESHOLD_MINUTES,
    rule: RuleCode | None = None,
    level: Level | None = None,
    definition_key: Annotated[DefinitionKey | None, Query(alias="definitionKey")] = None,
    limit: Limit = 50,
    cursor: Cursor = None,
) -> HealthInspection:
    """Every problem of the rules of SPEC O-16 within the caller's tenants,
    one per task (missing token > job anomaly > stuck), critical first and
    oldest first, with counts by rule and level and the health score. The
    page and the counts are read by one statement
    (:mod:`flowledger.ops.health.page`): no problem outside the page is
    built."""
    threshold = _threshold(threshold_minutes)
    after = decode_cursor(cursor, (int, datetime, int, int, int))
    now = ctx.now()
    async with ctx.read_db.read() as conn:
        found = await problem_page(
            conn,
            now=now,
            threshold=threshold,
            tenants=caller.tenant_scope,
            definition_key=definition_key,
            rule=rule,
            level=level,
            after=after,
            limit=limit,
        )
        runtime = await runtime_figures(conn, now)
    summary = found.summary
    score = health_score_from_counts(summary, runtime).score
    return HealthInspection(
        threshold_minutes=threshold_minutes,
        now=now,
        items=[_item(p, now) for p in found.items],
        next=cursor_for(found.next),
        summary=HealthSummary(by_rule=summary["byRule"], by_level=summary["byLevel"], score=score),
    )


def _item(p: inspection.Problem, now: datetime) -> HealthItem:
    return HealthItem(**problem_fields(p, now))


@router.get("/health-score", response_model=HealthScorePublic)
async def health_score(ctx: Ctx, caller: CurrentCaller) -> HealthScorePublic:
    """The engine health score (0-100) with its deductions and inputs."""
    now = ctx.now()
    async with ctx.read_db.read() as conn:
        score = await engine_health_score(conn, caller.tenant_scope, now=now)
    return HealthScorePublic.model_validate(score.to_public())


@router.get("/health-history", response_model=HealthHistory)
async def health_history(
    ctx: Ctx,
    _caller: CurrentCaller,
    start: Annotated[UtcTime | None, Query(alias="from")] = None,
    end: Annotated[UtcTime | None, Query(alias="to")] = None,
) -> HealthHistory:
    """The health snapshots in ``[from, to]`` (default: the last 24 h),
    oldest first, at most one per snapshot interval. Engine-wide."""
    end = end or ctx.now()
    if start is None:
        try:
            start = end - timedelta(days=1)
        except OverflowError:  # `to` within a day of year 1: from its first moment
            start = datetime.min.replace(tzinfo=UTC)
    if start > end:
        raise InvalidQuery("from must not be after to", field="from")
    if end - start > MAX_HISTORY:
        raise InvalidQuery("at most 31 days of history at once", field="from")
    interval = timedelta(seconds=ctx.settings.health_snapshot_interval_s)
    async with ctx.read_db.read() as conn:
        points = await history(conn, start=start, end=end, interval=interval)
    return HealthHistory.model_validate(
        {
            "intervalSeconds": interval.total_seconds(),
            "from": start,
            "to": end,
            "points": points,
        }
    )
