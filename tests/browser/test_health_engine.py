"""The health inspection page and the engine diagnostics tab (issue 14
items 5 and 6, SPEC O-16, O-18) against ``flowledger run`` with the demo
data, whose broken instances give every health rule a case: both pages in
both languages (a problem's text and suggestion worded in the page's
language from the item's messageParams); the threshold, rule and level filters checked row for row
against the API; every listed instance linked to its drawer; a saved view
pinning a threshold; the engine cards against ``GET /engine/diagnostics``;
both charts drawn; a recovery action reached from a problem's suggested
repair, previewed, then run, and its effect checked through the API."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from playwright.sync_api import Page, expect
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from tests.browser.conftest import LANGS, Opener, Server, shot


@pytest.fixture(scope="module")
def api(server: Server) -> Iterator[httpx.Client]:
    with server.api() as client:
        yield client


def _inspect(api: httpx.Client, **query: Any) -> dict[str, Any]:
    response = api.get("/engine/health-inspection", params={"limit": 200, **query})
    response.raise_for_status()
    return dict(response.json())


def _pick(page: Page, testid: str, label: str) -> None:
    """Choose ``label`` in the select ``testid``. A dropdown opened while the
    page is still loading (the saved views arrive after the problems) can be
    closed under the click by that re-render: then it is opened again."""
    option = page.locator(".ant-select-dropdown:not(.ant-select-dropdown-hidden)").get_by_title(
        label, exact=True
    )
    for _ in range(2):
        page.get_by_test_id(testid).click()
        try:
            option.click(timeout=5_000)
            return
        except PlaywrightTimeout:
            page.keyboard.press("Escape")
    page.get_by_test_id(testid).click()
    option.click()


def _rows(page: Page) -> Any:
    return page.locator("[data-testid^='health-row-']")


def _expect_rows(page: Page, api: httpx.Client, **query: Any) -> None:
    """The page lists exactly the API's problems, each instance linked. The
    worker clears the demo's due work meanwhile: a mismatch is checked again
    after a reload (the page does not poll)."""
    for attempt in range(3):
        items = _inspect(api, **query)["items"]
        try:
            expect(_rows(page)).to_have_count(len(items), timeout=5_000 if attempt < 2 else None)
            break
        except AssertionError:
            if attempt == 2:
                raise
            page.reload()
            page.locator(
                "[data-testid='health-groups'], [data-testid='health-empty']"
            ).first.wait_for()
    for item in items:
        row = page.get_by_test_id(f"health-row-{item['rule']}-{item['instanceId'] or 'none'}")
        expect(row.first).to_be_visible()
        if item["instanceId"]:
            link = row.first.get_by_test_id(f"instance-link-{item['instanceId']}").first
            assert f"instance={item['instanceId']}" in (link.get_attribute("href") or "")
        # the suggested repair: the recovery action the API names, else the drawer
        repair = row.first.get_by_test_id("repair")
        if item["recoveryAction"]:
            href = repair.get_by_role("link").get_attribute("href") or ""
            assert f"/monitor/engine?action={item['recoveryAction']}" in href
        elif item["instanceId"]:
            href = repair.get_by_role("link").get_attribute("href") or ""
            assert f"instance={item['instanceId']}" in href


def _expect_worded(page: Page, lang: str, items: list[dict[str, Any]]) -> None:
    """What is wrong and the suggestion in the page's language: zh-CN words
    them from messageParams, en shows the API's English word for word. The
    demo's lost delay wake job (age-free text) and its unconfirmed trigger
    outcome (its own suggestion: confirm first, never resend)."""
    delay = next(i for i in items if i["rule"] == "delay_missing_wake_job")
    trigger = next(
        i for i in items if i["rule"] == "trigger_execution_failed" and not i["recoveryAction"]
    )
    assert trigger["messageParams"]["outcomeUnconfirmed"] is True
    if lang == "zh-CN":
        p, q = delay["messageParams"], trigger["messageParams"]
        # the zh-CN texts, fullwidth punctuation and all
        delay_text = "的延时任务 {} 没有唤醒作业，将无法自动唤醒"  # noqa: RUF001
        message = f"节点「{p['nodeKey']}」" + delay_text.format(p["taskId"])
        unconfirmed = "调用结果未确认：先与接收方核实结果，再重试作业 {}，或强制跳转越过"  # noqa: RUF001
        suggestion = unconfirmed.format(q["jobId"]) + f"节点「{q['nodeKey']}」"
    else:
        message, suggestion = delay["message"], trigger["suggestion"]
    row = page.get_by_test_id(f"health-row-delay_missing_wake_job-{delay['instanceId']}").first
    expect(row.get_by_test_id("health-message")).to_have_text(message)
    row = page.get_by_test_id(f"health-row-trigger_execution_failed-{trigger['instanceId']}").first
    row.get_by_test_id("repair").hover()
    tip = page.locator(".ant-tooltip:not(.ant-tooltip-hidden) [data-testid='health-suggestion']")
    expect(tip).to_have_text(suggestion)
    shot(page, f"health-suggestion-{lang}")
    page.mouse.move(0, 0)
    expect(tip).to_have_count(0)


def test_health_inspection_filters_links_and_saved_view(
    server: Server, open_console: Opener, api: httpx.Client
) -> None:
    default = _inspect(api)
    rules = {i["rule"] for i in default["items"]}
    assert {"token_task_mismatch", "delay_missing_wake_job", "instance_stalled"} <= rules
    # the demo's unconfirmed trigger outcome is repaired on the instance, not resent
    assert any(
        i["rule"] == "trigger_execution_failed" and i["recoveryAction"] is None
        for i in default["items"]
    )
    for lang in LANGS:
        page, _ = open_console(lang, path="/monitor/health")
        page.get_by_test_id("health-groups").wait_for()
        title = "健康巡检" if lang == "zh-CN" else "Health inspection"
        expect(page.get_by_test_id("nav-health")).to_have_text(title)
        score = str(_inspect(api)["summary"]["score"])
        expect(page.get_by_test_id("health-summary-score")).to_contain_text(score)
        _expect_worded(page, lang, default["items"])
        shot(page, f"health-{lang}")

    # page is the en one: the default threshold lists what the API lists
    _expect_rows(page, api)
    # one day: only the problems older than a day; then ten minutes
    _pick(page, "health-threshold", "1 d")
    expect(page).to_have_url(re.compile(r"threshold=1440"))
    _expect_rows(page, api, thresholdMinutes=1440)
    _pick(page, "health-threshold", "10 min")
    _expect_rows(page, api, thresholdMinutes=10)
    # by rule, then by level
    _pick(page, "health-rule", "Delay without a wake job")
    expect(page).to_have_url(re.compile(r"rule=delay_missing_wake_job"))
    delay = _inspect(api, thresholdMinutes=10, rule="delay_missing_wake_job")["items"]
    assert delay
    _expect_rows(page, api, thresholdMinutes=10, rule="delay_missing_wake_job")
    expect(page.locator("[data-testid^='health-group-']")).to_have_count(1)
    # its suggested repair is the delay-wake recovery of that instance
    href = page.get_by_test_id("repair-recovery-delay-wake").first.get_attribute("href") or ""
    assert f"action=delay-wake&instanceId={delay[0]['instanceId']}" in href
    _pick(page, "health-level", "Critical")
    expect(page).to_have_url(re.compile(r"level=critical"))
    _expect_rows(page, api, thresholdMinutes=10, rule="delay_missing_wake_job", level="critical")
    # an instance repair (force jump) opens the instance drawer
    page.get_by_test_id("health-reset").click()
    _pick(page, "health-rule", "Instance stalled")
    stalled = _inspect(api, thresholdMinutes=10, rule="instance_stalled")["items"][0]
    repair = page.get_by_test_id("repair").first.get_by_test_id(
        f"instance-link-{stalled['instanceId']}"
    )
    assert f"instance={stalled['instanceId']}" in (repair.get_attribute("href") or "")

    # a saved view pins a threshold and a level
    page.get_by_test_id("health-reset").click()
    _pick(page, "health-threshold", "2 h")
    _pick(page, "health-level", "Warning")
    page.get_by_test_id("health-view-save").click()
    page.get_by_test_id("health-view-name").fill("two hours, warnings")
    page.get_by_test_id("health-view-save-ok").click()
    expect(page).to_have_url(re.compile(r"view=\d+"))
    views = api.get("/views", params={"scope": "health"}).json()["items"]
    view = next(v for v in views if v["name"] == "two hours, warnings")
    assert view["filters"] == {"thresholdMinutes": 120, "level": "warning"}
    page.goto(f"{server.base}/monitor/health")
    page.get_by_test_id("health-groups").wait_for()
    _pick(page, "health-view-select", "two hours, warnings")
    expect(page).to_have_url(re.compile(r"threshold=120&level=warning"))
    _expect_rows(page, api, thresholdMinutes=120, level="warning")
    _delete_view(page, api, view["id"])
    expect(page).not_to_have_url(re.compile(r"view="))
    views = api.get("/views", params={"scope": "health"}).json()["items"]
    assert all(v["id"] != view["id"] for v in views)


def _delete_view(page: Page, api: httpx.Client, view_id: int) -> None:
    """Delete the picked view through its confirmation, and wait until the
    API no longer lists it. In loaded CI runs the confirmation twice closed
    with no DELETE seen within 5 s: the click had not reached the OK button
    (the views dropdown was still closing over it) or the request was still
    queued behind the page's reads. So: wait for every dropdown to be gone,
    press OK, and judge by the outcome the user sees — the view gone — within
    10 s; else open the confirmation again as the user would. The delete
    button is loading while its request runs, so a second press cannot
    delete twice."""
    dropdowns = page.locator(".ant-select-dropdown:not(.ant-select-dropdown-hidden)")
    for _ in range(3):
        expect(dropdowns).to_have_count(0)
        page.get_by_test_id("health-view-delete").click()
        ok = page.get_by_test_id("health-view-delete-ok")
        ok.wait_for()
        ok.click()
        for _ in range(50):
            views = api.get("/views", params={"scope": "health"}).json()["items"]
            if all(v["id"] != view_id for v in views):
                return
            page.wait_for_timeout(200)
        page.keyboard.press("Escape")
    raise AssertionError(f"view {view_id} was not deleted from the console")


def test_engine_tab_cards_charts_and_a_recovery_run(
    server: Server, open_console: Opener, api: httpx.Client
) -> None:
    for lang in LANGS:
        page, _ = open_console(lang, path="/monitor/engine")
        page.get_by_test_id("recovery-panel").wait_for()
        diagnostics = api.get("/engine/diagnostics").json()
        assert diagnostics["nodes"], "flowledger run is a live node"
        for node in diagnostics["nodes"]:
            card = page.get_by_test_id(f"node-card-{node['id']}")
            expect(card.get_by_test_id("node-id")).to_have_text(node["id"])
            expect(card.get_by_test_id("node-slots")).to_contain_text(f"/ {node['slotsCapacity']}")
            leases = [
                lease["name"]
                for lease in diagnostics["leaders"]
                if lease["holder"] == node["id"] and lease["valid"]
            ]
            expect(card.get_by_test_id("node-leader")).to_have_count(1 if leases else 0)
        for pool in diagnostics["queue"]["pools"]:
            expect(page.get_by_test_id(f"pool-card-{pool['pool']}")).to_be_visible()
        for chart in ("queue-chart", "trend-chart"):
            expect(page.get_by_test_id(chart).locator("canvas")).to_have_count(1)
        title = "引擎诊断" if lang == "zh-CN" else "Engine diagnostics"
        expect(page.get_by_test_id("tab-engine")).to_have_text(title)
        shot(page, f"engine-{lang}")

    # the trend's range picker asks the history for that window
    with page.expect_response(lambda r: "/engine/health-history?from=" in r.url) as asked:
        page.get_by_test_id("trend-card").locator(".ant-picker").click()
        page.locator(".ant-picker-presets").get_by_text("Last 7 days").click()
    points = len(asked.value.json()["points"])
    expect(page.get_by_test_id("trend-points")).to_contain_text(f"{points} points")

    # from the health inspection's suggested repair to the delay-wake action
    item = _inspect(api, thresholdMinutes=10, rule="delay_missing_wake_job")["items"][0]
    instance = item["instanceId"]
    page.goto(f"{server.base}/monitor/health?threshold=10&rule=delay_missing_wake_job")
    page.get_by_test_id("repair-recovery-delay-wake").first.click()
    pane = page.get_by_test_id("recovery-delay-wake")
    expect(pane.get_by_test_id("recovery-instance")).to_have_value(str(instance))
    body = {"instanceId": instance, "minAgeMinutes": 0, "limit": 100}
    planned = api.post("/engine/recovery/delay-wake/preview", json=body).json()
    assert planned["count"] >= 1 and planned["byAction"].get("recreate")
    pane.get_by_test_id("recovery-preview").click()
    expect(pane.get_by_test_id("recovery-count")).to_have_text(str(planned["count"]))
    shot(page, "engine-recovery-preview-en")
    pane.get_by_test_id("recovery-run").click()
    page.get_by_test_id("recovery-reason").fill("wake job lost (browser test)")
    page.get_by_test_id("recovery-confirm").click()
    expect(pane.get_by_test_id("recovery-totals")).to_contain_text(f"{planned['count']} in total")
    shot(page, "engine-recovery-run-en")
    # through the API: the wake job is back and the problem is gone
    assert api.post("/engine/recovery/delay-wake/preview", json=body).json()["count"] == 0
    jobs = api.get("/engine/jobs", params={"instanceId": instance, "type": "delay_wake"}).json()
    assert any(j["status"] in ("pending", "running", "succeeded") for j in jobs["items"])
    remaining = _inspect(api, thresholdMinutes=10, rule="delay_missing_wake_job")["items"]
    assert all(i["instanceId"] != instance for i in remaining)


def test_engine_tab_shows_the_last_retention_run(open_console: Opener, api: httpx.Client) -> None:
    """The engine tab's retention card (issue 34 item 2): the newest run's
    start, status, duration, rows removed and partitions dropped (SQLite:
    none), in both languages."""
    run = api.post("/engine/retention/run", json={"policies": ["workflow_jobs"]}).json()
    assert run["status"] == "succeeded"
    for lang in LANGS:
        page, _ = open_console(lang, path="/monitor/engine")
        card = page.get_by_test_id("engine-retention")
        newest = api.get("/engine/retention/runs", params={"limit": 1}).json()["items"][0]
        expect(card.get_by_test_id("engine-retention-rows")).to_contain_text(
            str(newest["rowsRemoved"])
        )
        expect(card.get_by_test_id("engine-retention-partitions")).to_contain_text(
            str(newest["partitionsDropped"])
        )
        expect(card.get_by_test_id("engine-retention-duration")).to_contain_text("ms")
        status = "成功" if lang == "zh-CN" else "Succeeded"
        expect(card.get_by_test_id("engine-retention-status")).to_have_text(status)
        title = "最近一次数据保留运行" if lang == "zh-CN" else "Last data retention run"
        expect(card).to_contain_text(title)
        shot(page, f"engine-retention-{lang}")
