"""The Grafana dashboard ``deploy/grafana/flowledger.json`` (SPEC O-22):
valid dashboard JSON whose every query names only series that flowledger's
``GET /metrics`` exports (checked against a real scrape of a populated
database, the health score included), each panel with a unique id and the Prometheus datasource
variable."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import httpx
from prometheus_client.parser import text_string_to_metric_families

from flowledger.clock import ManualClock
from flowledger.db.database import Database
from tests.alerts.support import rule
from tests.alerts.test_metrics_endpoint import known_state

DASHBOARD = Path(__file__).resolve().parents[2] / "deploy" / "grafana" / "flowledger.json"
SERIES = re.compile(r"\bflowledger_[a-z_]+\b")
HEALTH_SCORE = "flowledger_engine_health_score_points"


def _panels(dashboard: dict[str, Any]) -> list[dict[str, Any]]:
    return [p for p in dashboard["panels"] if p["type"] != "row"]


async def test_dashboard_uses_only_exported_metrics_O22(
    db: Database, clock: ManualClock, client: httpx.AsyncClient
) -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    await known_state(db, clock)
    await rule(db, clock, tenant="acme")
    scraped = (await client.get("/metrics")).text
    exported = {s.name for f in text_string_to_metric_families(scraped) for s in f.samples}
    used = {
        name
        for panel in _panels(dashboard)
        for t in panel["targets"]
        for name in SERIES.findall(t["expr"])
    }
    assert used <= exported
    for alert_metric in (
        HEALTH_SCORE,
        "flowledger_queue_backlog_items",
        "flowledger_dead_letters_items",
        "flowledger_job_failure_rate_percent",
        "flowledger_stuck_jobs_items",
    ):
        assert alert_metric in used
    for ledger in ("flowledger_jobs_enqueued_total", "flowledger_jobs_settled_total"):
        assert ledger in used
    assert {"flowledger_workers_live", "flowledger_slots_in_use"} <= used


def test_dashboard_shape_O22() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    ids = [p["id"] for p in dashboard["panels"]]
    assert len(ids) == len(set(ids))
    assert dashboard["uid"] == "flowledger-ops" and dashboard["schemaVersion"] >= 36
    names = [v["name"] for v in dashboard["templating"]["list"]]
    assert names == ["datasource", "tenant"]
    for panel in _panels(dashboard):
        assert panel["datasource"]["uid"] == "${datasource}"
        assert panel["targets"], panel["title"]
        grid = panel["gridPos"]
        assert grid["x"] + grid["w"] <= 24
