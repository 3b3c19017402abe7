"""The leader-gated alert evaluator service (SPEC O-22, L-20): every
``FLOWLEDGER_ALERT_EVAL_INTERVAL_S`` seconds (default 60, ±10 % jitter) each
worker's instance tries to take the ``workflow-alert-evaluate`` leader lease
(:func:`~flowledger.ledger.nodes.leader_acquire`, TTL two intervals); only
the holder runs :func:`~flowledger.ops.alerts.evaluator.evaluate_once`. A
leader that dies is replaced once its lease lapses. Even overlapping
leaders write each transition once (see the evaluator's conditional
updates and UNIQUE events)."""

from __future__ import annotations

import os
import socket
import uuid
from datetime import timedelta

import structlog

from flowledger.clock import Clock
from flowledger.db.database import Database
from flowledger.ledger.nodes import leader_acquire
from flowledger.ops.alerts.evaluator import EvaluationSummary, evaluate_once
from flowledger.settings import get_settings
from flowledger.worker.services import PeriodicService

log = structlog.get_logger("flowledger.alerts")

EVALUATE_TASK = "workflow-alert-evaluate"


class AlertEvaluator(PeriodicService):
    name = EVALUATE_TASK

    def __init__(
        self,
        db: Database,
        clock: Clock,
        *,
        interval_s: float | None = None,
        holder: str | None = None,
    ) -> None:
        super().__init__(interval_s or get_settings().alert_eval_interval_s)
        self.db, self.clock = db, clock
        self.holder = holder or f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.last_summary: EvaluationSummary | None = None

    async def run_once(self) -> None:
        async with self.db.begin() as conn:
            leader = await leader_acquire(
                conn,
                EVALUATE_TASK,
                self.holder,
                now=self.clock.now(),
                ttl=timedelta(seconds=self.interval_s * 2),
            )
        if not leader:
            self.last_summary = None
            return
        summary = await evaluate_once(self.db, self.clock)
        self.last_summary = summary
        if summary.fired or summary.resolved:
            log.info(
                "alerts_evaluated",
                fired=summary.fired,
                resolved=summary.resolved,
                jobs=len(summary.jobs),
            )
