"""The analytics tab and the alerting page in the browser (issue 14 items 7,
8; SPEC O-14, O-22), against ``flowledger run`` with the demo data: both
pages in both languages; the analytics figures equal the API's (totals, a
top-definitions row, the charts drawn on a canvas), the definition filter
changes the figures and the URL, an overdue row links to its instance; an
alert rule refused with a 422 shown on its field, then created, fired by
the evaluator (the event shows the value), edited, disabled, silenced (the
silence expired early) and deleted — each effect checked through the API."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import LANGS, Opener, Server, shot

# One pass of the evaluator the server's leader runs every minute (the same
# function), run in a subprocess: Playwright's sync API owns this thread's loop.
EVALUATE = """
import asyncio, os
from flowledger.clock import SystemClock
from flowledger.db.database import Database
from flowledger.ops.alerts.evaluator import evaluate_once
from flowledger.ledger.driver import ledger_driver

async def main():
    db = Database(os.environ["FLOWLEDGER_DATABASE_URL"])
    try:
        await evaluate_once(db, SystemClock(), ledger=ledger_driver(db))
    finally:
        await db.dispose()

asyncio.run(main())
"""


@pytest.fixture(scope="module")
def api(server: Server) -> Iterator[httpx.Client]:
    with server.api() as client:
        yield client


def _evaluate(server: Server) -> None:
    done = subprocess.run(
        [sys.executable, "-c", EVALUATE],
        env=server.env,
        cwd=server.cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr


def _text(page: Page, test_id: str) -> str:
    return page.get_by_test_id(test_id).inner_text().strip()


def _totals_match(page: Page, totals: dict[str, Any]) -> None:
    for key, field in (
        ("instances", "instances"),
        ("finished", "finished"),
        ("pendingTasks", "pendingTasks"),
        ("startsLast7Days", "startsLast7Days"),
    ):
        expect(page.get_by_test_id(f"totals-{key}")).to_have_text(f"{totals[field]:,}")


def _pick(page: Page, select_test_id: str, text: str, *, search: bool = False) -> None:
    """Choose an option of an Ant Design select by its visible text; with
    ``search``, typed into the select's search first — its list is virtual,
    and an option past the first rows is not rendered until the list is
    filtered (the session's server holds every definition earlier tests
    deployed)."""
    page.get_by_test_id(select_test_id).click()
    if search:
        page.keyboard.type(text)
    page.locator(
        ".ant-select-dropdown:visible .ant-select-item-option", has_text=text
    ).first.click()


def _confirm(page: Page) -> None:
    page.locator("[data-testid=confirm-ok]:visible").click()


def test_analytics_figures_filter_and_overdue_links(
    server: Server, open_console: Opener, api: httpx.Client
) -> None:
    for lang in LANGS:
        page, _ = open_console(lang, path="/monitor/analytics")
        page.get_by_test_id("totals-instances").wait_for()
        # both charts are ECharts canvases, not drawn by hand
        expect(page.locator("[data-testid=daily-chart] canvas")).to_have_count(1)
        expect(page.locator("[data-testid=async-chart] canvas")).to_have_count(1)
        expect(page.get_by_test_id("tab-analytics")).to_have_text(
            "数据分析" if lang == "zh-CN" else "Analytics"
        )
        page.locator("[data-testid=panel-async-health] .ant-table-row").first.wait_for()
        shot(page, f"analytics-{lang}")

    # the figures are the API's (page is the English one)
    _totals_match(page, api.get("/analytics/totals").json())
    top = api.get("/analytics/top-definitions").json()["items"][0]
    row = page.locator(
        f"[data-testid=panel-top-definitions] tr[data-row-key='{top['definitionKey']}']"
    )
    cells = [c.strip() for c in row.locator("td").all_inner_texts()]
    assert cells[:5] == [
        top["definitionKey"],
        *(str(top[k]) for k in ("total", "running", "approved", "rejected")),
    ], cells

    # the definition filter: figures and URL follow it
    key = "purchase"
    before = _text(page, "totals-instances")
    _pick(page, "filter-definition", key, search=True)
    page.wait_for_url(f"**definitionKey={key}**")
    filtered = api.get("/analytics/totals", params={"definitionKey": key}).json()
    _totals_match(page, filtered)
    assert _text(page, "totals-instances") != before
    expect(page.locator("[data-testid=panel-top-definitions] .ant-table-row")).to_have_count(1)
    # a reload keeps the filter (the URL is the state)
    page.reload()
    _totals_match(page, filtered)

    # an overdue task links to its instance (the demo ships one)
    overdue = api.get("/analytics/timeouts", params={"definitionKey": key}).json()
    assert overdue["overdueTasks"], overdue
    expect(page.get_by_test_id("timeouts-overdue")).to_have_text(str(overdue["overdue"]))
    instance = overdue["overdueTasks"][0]["instanceId"]
    link = page.locator(f"[data-testid=overdue-table] [data-testid=instance-link-{instance}]")
    link.click()
    page.wait_for_url(f"**instance={instance}**")
    assert f"definitionKey={key}" in page.url


def test_alert_rule_lifecycle_events_and_silences(
    server: Server, open_console: Opener, api: httpx.Client
) -> None:
    page, watch = open_console("en", path="/system/alerts")
    expect(page.get_by_test_id("metric-dead_letters")).to_be_visible()
    name = "Dead letters in the browser test"

    # create: an invalid threshold is refused by the API, shown on its field
    page.get_by_test_id("rule-create").click()
    page.get_by_test_id("rule-name").fill(name)
    _pick(page, "rule-metric", "Dead letters")
    page.get_by_test_id("rule-threshold").fill("a lot")
    page.get_by_test_id("rule-for").fill("0")
    watch.allow(422, "/engine/alerts/rules")
    page.get_by_test_id("rule-save").click()
    field = page.locator(".ant-form-item", has=page.get_by_test_id("rule-threshold"))
    expect(field.locator(".ant-form-item-explain-error")).to_contain_text("valid number")
    shot(page, "alerts-rule-422-en")
    assert not [r for r in api.get("/engine/alerts/rules").json()["items"] if r["name"] == name]

    # then valid: dead letters > -1 holds at once (for 0)
    page.get_by_test_id("rule-threshold").fill("-1")
    page.get_by_test_id("rule-save").click()
    expect(page.get_by_test_id("rule-form")).to_be_hidden()
    rule = next(r for r in api.get("/engine/alerts/rules").json()["items"] if r["name"] == name)
    assert (rule["metric"], rule["comparison"], rule["threshold"], rule["forSeconds"]) == (
        "dead_letters",
        "gt",
        -1.0,
        0,
    )
    rid = rule["id"]

    # the evaluator fires it; the events list shows the value that decided it
    _evaluate(server)
    event = api.get("/engine/alerts/events", params={"ruleId": rid}).json()["items"][0]
    assert event["kind"] == "firing"
    page.reload()
    expect(page.get_by_test_id(f"rule-state-{rid}")).to_have_text("Firing")
    shot(page, "alerts-rules-en")
    page.get_by_test_id("alerts-tab-events").click()
    expect(page.get_by_test_id(f"event-kind-{event['id']}")).to_have_text("Firing")
    expect(page.get_by_test_id(f"event-value-{event['id']}")).to_have_text(f"{event['value']:g}")
    page.get_by_test_id("alerts-tab-rules").click()

    # edit: a bad email recipient is refused on its field (channels.email),
    # then name and `for` change
    page.get_by_test_id(f"rule-edit-{rid}").click()
    email = page.get_by_test_id("rule-email")
    email.locator("input").fill("not-an-email")
    email.locator("input").press("Enter")
    page.get_by_test_id("rule-save").click()
    field = page.locator(".ant-form-item", has=email)
    expect(field.locator(".ant-form-item-explain-error")).to_contain_text("not an email address")
    email.locator(".ant-select-selection-item-remove").click()
    page.get_by_test_id("rule-name").fill(f"{name} (edited)")
    page.get_by_test_id("rule-for").fill("2m")
    page.get_by_test_id("rule-save").click()
    expect(page.get_by_test_id("rule-form")).to_be_hidden()
    rule = api.get(f"/engine/alerts/rules/{rid}").json()
    assert (rule["name"], rule["forSeconds"], rule["for"]) == (f"{name} (edited)", 120, "2m")
    assert rule["channels"]["email"] == []

    # disable: back to ok without a notification
    page.get_by_test_id(f"rule-enabled-{rid}").click()
    expect(page.get_by_test_id(f"rule-state-{rid}")).to_have_text("OK")
    rule = api.get(f"/engine/alerts/rules/{rid}").json()
    assert (rule["enabled"], rule["state"]) == (False, "ok")

    # silence this rule for 2 h, then expire it early
    page.get_by_test_id(f"rule-silence-{rid}").click()
    page.get_by_test_id("silence-comment").fill("maintenance window")
    page.get_by_test_id("silence-save").click()
    expect(page.get_by_test_id("silence-form")).to_be_hidden()
    silence = api.get("/engine/alerts/silences", params={"state": "active"}).json()["items"][0]
    assert silence["matcher"]["ruleId"] == rid and silence["comment"] == "maintenance window"
    page.get_by_test_id("alerts-tab-silences").click()
    sid = silence["id"]
    expect(page.get_by_test_id(f"silence-state-{sid}")).to_have_text("Active")
    page.get_by_test_id(f"silence-expire-{sid}").click()
    _confirm(page)
    expect(page.get_by_test_id(f"silence-state-{sid}")).to_have_text("Expired")
    expired = next(
        s
        for s in api.get("/engine/alerts/silences", params={"state": "expired"}).json()["items"]
        if s["id"] == sid
    )
    assert expired["expiredAt"] is not None

    # the zh-CN page, with the event and the silence on record
    zh, _ = open_console("zh-CN", path="/system/alerts")
    expect(zh.get_by_test_id(f"rule-state-{rid}")).to_have_text("正常")
    shot(zh, "alerts-rules-zh-CN")
    zh.get_by_test_id("alerts-tab-events").click()
    expect(zh.get_by_test_id(f"event-kind-{event['id']}")).to_have_text("告警中")
    shot(zh, "alerts-events-zh-CN")
    zh.get_by_test_id("alerts-tab-silences").click()
    expect(zh.get_by_test_id(f"silence-state-{sid}")).to_have_text("已过期")
    shot(zh, "alerts-silences-zh-CN")

    # delete: gone from the API, its events kept
    page.get_by_test_id("alerts-tab-rules").click()
    page.get_by_test_id(f"rule-delete-{rid}").click()
    _confirm(page)
    expect(page.get_by_test_id(f"rule-edit-{rid}")).to_have_count(0)
    assert api.get(f"/engine/alerts/rules/{rid}").status_code == 404
    assert api.get("/engine/alerts/events", params={"ruleId": rid}).json()["items"]
