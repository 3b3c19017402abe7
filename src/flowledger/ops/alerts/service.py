"""The leader-gated alert evaluator service (SPEC O-22, L-20): every
``FLOWLEDGER_ALERT_EVAL_INTERVAL_S`` seconds (default 60, ±10 % jitter) each
worker's instance tries to take the ``workflow-alert-evaluate`` leader lease
through the process's leader elector (TTL two intervals); only
the holder runs :func:`~flowledger.ops.alerts.evaluator.evaluate_once`. A
leader that dies is replaced once its lease lapses; one that stops resigns
(releases it) so another takes over at its next tick. Even overlapping
leaders write each transition once (see the evaluator's conditional
updates and UNIQUE events). The metrics it reads are the table it is
built with (:data:`~flowledger.ops.alerts.metrics.METRICS` by default)."""

from __future__ import annotations

from collections.abc import Mapping

import structlog

from flowledger.clock import Clock
from flowledger.db.database import Database
from flowledger.ops.alerts.evaluator import EvaluationSummary, evaluate_once
from flowledger.ops.alerts.metrics import METRICS, Metric
from flowledger.worker.leader import LeaderElector
from flowledger.worker.services import LeaderService

log = structlog.get_logger("flowledger.alerts")

EVALUATE_TASK = "workflow-alert-evaluate"


class AlertEvaluator(LeaderService):
    name = EVALUATE_TASK
    # the first pass one interval after the start, not beside the first
    # claims (per-tenant metrics over the last hour's attempts)
    run_at_start = False

    def __init__(
        self,
        db: Database,
        clock: Clock,
        *,
        interval_s: float,
        holder: str | None = None,
        elector: LeaderElector | None = None,
        metrics: Mapping[str, Metric] = METRICS,
    ) -> None:
        super().__init__(db, interval_s, elector=elector, holder=holder)
        self.db, self.clock = db, clock
        self.metrics = metrics
        self.last_summary: EvaluationSummary | None = None

    async def run_once(self) -> None:
        async with self.db.begin() as conn:
            leader = await self.lead(conn, now=self.clock.now())
        if not leader:
            self.last_summary = None
            return
        summary = await evaluate_once(self.db, self.clock, ledger=self.ledger, metrics=self.metrics)
        self.last_summary = summary
        if summary.fired or summary.resolved:
            log.info(
                "alerts_evaluated",
                fired=summary.fired,
                resolved=summary.resolved,
                jobs=len(summary.jobs),
            )
