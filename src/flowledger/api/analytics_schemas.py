"""Response bodies of the analytics panels (SPEC O-14); the exact definition
of every figure is in :mod:`flowledger.ops.analytics.instances`,
:mod:`flowledger.ops.analytics.tasks` and :mod:`flowledger.ops.analytics.async_work`.
Durations are whole milliseconds; ``null`` when there is nothing to average."""

from __future__ import annotations

from datetime import datetime

from pydantic import Field

from flowledger.api.schemas import ApiModel


class AnalyticsTotals(ApiModel):
    definition_key: str | None = None
    instances: int
    instances_by_status: dict[str, int]
    finished: int
    avg_duration_ms: int | None = None
    pending_tasks: int
    starts_last_7_days: int = Field(alias="startsLast7Days")
    estimated: list[str] = Field(
        default=[],
        description="The figures that are estimates (issue 34 item 3): 'instances' when "
        "a status count is, 'finished' and 'avgDurationMs' from a block sample of the "
        "table when reading every finished instance would cost too much.",
    )
    estimated_statuses: list[str] = Field(
        default=[],
        description="The statuses of instancesByStatus whose figure is the planner's "
        "estimate (an exact count would read millions of rows).",
    )


class DailyPoint(ApiModel):
    date: str = Field(description="Local date (YYYY-MM-DD) in timeZone.")
    starts: int
    finishes: int


class AnalyticsDaily(ApiModel):
    definition_key: str | None = None
    time_zone: str
    days: list[DailyPoint]


class TopDefinition(ApiModel):
    definition_key: str
    total: int
    running: int
    approved: int
    rejected: int
    avg_duration_ms: int | None = None


class AnalyticsTopDefinitions(ApiModel):
    definition_key: str | None = None
    period_days: int
    items: list[TopDefinition]
    estimated: list[str] = Field(
        default=[],
        description="The item fields that are estimates from a block sample of the table "
        "(reading every row of the period would cost too much; issue 34 item 3); "
        "empty when every figure is exact.",
    )


class NodeBottleneck(ApiModel):
    definition_key: str
    node_key: str
    handled: int
    avg_handling_ms: int | None = None
    p90_handling_ms: int | None = Field(default=None, alias="p90HandlingMs")
    backlog: int


class AnalyticsNodeBottlenecks(ApiModel):
    definition_key: str | None = None
    period_days: int
    items: list[NodeBottleneck]
    estimated: list[str] = Field(
        default=[],
        description="The item fields that are estimates from a block sample of the table "
        "(reading every row of the period would cost too much; issue 34 item 3); "
        "empty when every figure is exact.",
    )


class ApproverLoad(ApiModel):
    assignee: str
    pending: int
    handled: int
    avg_handling_ms: int | None = None


class AnalyticsApproverWorkload(ApiModel):
    definition_key: str | None = None
    period_days: int
    items: list[ApproverLoad]
    estimated: list[str] = Field(
        default=[],
        description="The item fields that are estimates from a block sample of the table "
        "(reading every row of the period would cost too much; issue 34 item 3); "
        "empty when every figure is exact.",
    )


class OverdueTask(ApiModel):
    task_id: int
    instance_id: int
    definition_key: str
    node_key: str
    assignee: str
    due_at: datetime
    overdue_seconds: float
    escalated_at: datetime | None = None


class AnalyticsTimeouts(ApiModel):
    definition_key: str | None = None
    now: datetime
    overdue: int
    due_within_24h: int = Field(alias="dueWithin24h")
    due_soon: int = Field(
        default=0,
        description="Pending tasks due within the instances list's due-soon window (4 h).",
    )
    escalated: int = Field(
        default=0, description="Pending tasks a deadline's escalation transferred or reported."
    )
    overdue_tasks: list[OverdueTask]


class JobTypeHealth(ApiModel):
    """One job type's jobs per status; ``estimatedStatuses`` names the
    figures that are the planner's estimates (issue 34 item 3)."""

    type: str
    total: int
    by_status: dict[str, int]
    estimated_statuses: list[str] = []


class StatusCounts(ApiModel):
    """Rows per status; ``estimatedStatuses`` names the figures that are the
    planner's estimates (an exact count would read millions of rows)."""

    total: int
    by_status: dict[str, int]
    estimated_statuses: list[str] = []


class AnalyticsAsyncHealth(ApiModel):
    definition_key: str | None = None
    jobs: list[JobTypeHealth]
    webhook_deliveries: StatusCounts
    subprocess_instances: StatusCounts
