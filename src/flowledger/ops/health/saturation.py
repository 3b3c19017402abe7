"""Whether the health score's inspection deductions are at their caps (SPEC
O-16, O-22; issue 34 item 3): the score takes 5 points per critical problem
up to 40 and 1 per warning problem up to 15, so with at least 8 critical
and 15 warning problems it is the same whatever their exact numbers. On a
volume database there are tens of thousands of each, and counting them all
(:mod:`flowledger.ops.health.counts`) is most of an alert evaluation; a few
short reads show the caps are reached instead. Read-only.

Each read is a lower bound of the de-duplicated count of its level —
problems that :func:`~flowledger.ops.health.inspection.one_per_task` can
never drop or move to the other level — stopped (``LIMIT``) once the cap
is reached:

- critical: the rows of ``webhook_delivery_failed`` and
  ``workflow_event_outbox_failed`` (instance-level rules, critical: one
  problem per instance each, never de-duplicated away — only
  ``instance_stalled`` is ever hidden);
- warning: the rows of ``workflow_event_outbox_pending`` (instance-level,
  warning), and the tasks ``waiting_task_stuck`` reports that no critical
  rule can: their token holds them (not ``token_task_mismatch``) and no
  failed or dead ``external_dispatch`` / ``trigger_dispatch`` job names
  them (whatever its instance) (``external_dispatch_failed`` /
  ``trigger_execution_failed``); the other critical rules report delay and
  trigger tasks only, never a human task. Whichever rule wins such a task
  is a warning one (``waiting_task_stuck`` or a warning rule before it),
  one problem per task.

When a bound falls short the caller counts exactly.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from sqlalchemy import exists, func, null, select
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db.engine_schema import workflow_tasks as tasks
from flowledger.db.schema import workflow_jobs as jobs
from flowledger.ops.health.query import (
    BROKEN_JOB,
    RuleParams,
    no_holder_probe,
    open_tasks,
    running,
    task_row,
)
from flowledger.ops.health.rule_queries import waiting_task_stuck_when
from flowledger.ops.health.rules import RULES_BY_CODE

#: the problems of each level from which the score's deduction is at its cap
#: (:data:`flowledger.ops.health.score.CAPS`: 5 x 8 = 40, 1 x 15 = 15)
CRITICAL_CAP = 8
WARNING_CAP = 15

_CRITICAL_RULES = ("webhook_delivery_failed", "workflow_event_outbox_failed")
_WARNING_RULES = ("workflow_event_outbox_pending",)


def surely_warning_tasks(p: RuleParams) -> Any:
    """The ``waiting_task_stuck`` tasks no critical rule can report (see the
    module docstring), with the instance check of the counting rules (a
    join, so that a ``LIMIT`` stops the scan of the open tasks)."""
    broken_dispatch = exists().where(
        jobs.c.type.in_(["external_dispatch", "trigger_dispatch"]),
        jobs.c.task_id == tasks.c.id,
        jobs.c.status.in_(BROKEN_JOB),
    )
    query = open_tasks(
        p, *waiting_task_stuck_when(p, no_holder_probe()), ~no_holder_probe(), ~broken_dispatch
    ).add_columns(*task_row(p, null(), tasks.c.created_at, null()))
    return running(p, query)


async def _at_least(conn: AsyncConnection, rows: Any, cap: int) -> int:
    """How many of ``rows`` there are, counting no further than ``cap``."""
    found = rows.limit(cap).subquery("bounded")
    return int((await conn.execute(select(func.count()).select_from(found))).scalar_one())


async def caps_reached(conn: AsyncConnection, params: RuleParams) -> bool:
    """Whether the inspection within ``params`` has at least
    :data:`CRITICAL_CAP` critical and :data:`WARNING_CAP` warning problems
    (False: maybe not — count them)."""
    counting = replace(params, counting=True)
    critical = 0
    for code in _CRITICAL_RULES:
        critical += await _at_least(conn, RULES_BY_CODE[code].build(counting), CRITICAL_CAP)
        if critical >= CRITICAL_CAP:
            break
    else:
        return False
    warning = 0
    for rows in (
        surely_warning_tasks(counting),
        *(RULES_BY_CODE[code].build(counting) for code in _WARNING_RULES),
    ):
        warning += await _at_least(conn, rows, WARNING_CAP)
        if warning >= WARNING_CAP:
            return True
    return False
