"""The batch operations page (issue 29 item 4, SPEC O-6, O-18): the recorded
batches of ``GET /engine/batches`` newest first with their kind and counts,
the kind filter in the URL, the drawer of one batch (``?batch=<id>``, kept
across a reload) with its items and their results, its live progress while
the batch runs, and every string in zh-CN and en (a missing key is a console
error, which fails the test). The batches are made through the API first: a
job batch retry (a dead job of the demo, if one is left, and an unknown id),
a job batch skip and a data retention run."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from playwright.sync_api import Page, Route, expect

from tests.browser.conftest import Opener, Server, quiet_network, shot

UNKNOWN_JOB = 987_654_321
ROWS = "[data-testid=batches-table] tbody tr.ant-table-row"


@pytest.fixture(scope="module")
def api(server: Server) -> Iterator[httpx.Client]:
    with server.api() as client:
        yield client


@pytest.fixture(scope="module")
def batches(api: httpx.Client) -> dict[str, dict[str, Any]]:
    """Three recorded batches, oldest first: retention run, retry, skip."""
    run = api.post("/engine/retention/run", json={})
    assert run.status_code == 200, run.text
    retention_id = f"retention-{run.json()['id']}"
    dead = api.get("/engine/jobs", params={"status": "dead", "limit": 1}).json()["items"]
    ids = [j["id"] for j in dead] + [UNKNOWN_JOB]
    retry = api.post(
        "/engine/jobs/batch-retry", json={"ids": ids, "reason": "the receiver is back"}
    )
    assert retry.status_code == 200, retry.text
    skip = api.post("/engine/jobs/batch-skip", json={"ids": [UNKNOWN_JOB], "reason": "obsolete"})
    assert skip.status_code == 200, skip.text
    out = {}
    for name, batch_id in (
        ("retention", retention_id),
        ("retry", retry.json()["batchId"]),
        ("skip", skip.json()["batchId"]),
    ):
        described = api.get(f"/engine/batches/{batch_id}")
        assert described.status_code == 200, described.text
        out[name] = described.json()
    return out


def _row_ids(page: Page) -> list[str]:
    return [r.get_attribute("data-batch") or "" for r in page.locator(ROWS).all()]


def _counts_text(lang: str, counts: dict[str, int]) -> list[str]:
    if lang == "zh-CN":
        return [
            f"共 {counts['total']} 项",
            f"完成 {counts['done']}",
            f"跳过 {counts['skipped']}",
            f"失败 {counts['failed']}",
        ]
    return [
        f"{counts['total']} in total",
        f"{counts['done']} done",
        f"{counts['skipped']} skipped",
        f"{counts['failed']} failed",
    ]


def _expect_items(page: Page, batch: dict[str, Any]) -> None:
    drawer = page.get_by_test_id("batch-drawer")
    items = drawer.locator("[data-testid=batch-items] tbody tr.ant-table-row")
    expect(items).to_have_count(len(batch["results"]))
    for row, item in zip(items.all(), batch["results"], strict=True):
        expect(row.locator("[data-result]")).to_have_attribute("data-result", item["result"])
        expect(row).to_contain_text(str(item["key"]))
        if item["reason"]:
            expect(row).to_contain_text(item["reason"])


def test_the_list_the_kind_filter_and_the_drawer_in_zh_cn(
    server: Server, open_console: Opener, batches: dict[str, dict[str, Any]]
) -> None:
    retention, retry, skip = batches["retention"], batches["retry"], batches["skip"]
    page, _ = open_console("zh-CN", path="/monitor/batches")
    expect(page.get_by_test_id("tab-batches")).to_have_text("批量操作")
    page.locator(ROWS).first.wait_for()
    # newest first: the skip, the retry, then the retention run
    ids = _row_ids(page)
    assert ids[:2] == [skip["id"], retry["id"]], ids
    assert ids.index(retention["id"]) > 1, ids
    for batch, kind in (
        (skip, "作业批量跳过"),
        (retry, "作业批量重试"),
        (retention, "数据保留运行"),
    ):
        row = page.locator(f"{ROWS}[data-batch='{batch['id']}']")
        expect(row.locator(f"[data-kind='{batch['kind']}']")).to_have_text(kind)
        expect(row.locator("[data-state]")).to_have_text("已完成")
        for text in _counts_text("zh-CN", batch["counts"]):
            expect(row.get_by_test_id("batch-counts")).to_contain_text(text)
        expect(row).to_contain_text(batch["actor"])
    expect(page.locator(f"{ROWS}[data-batch='{skip['id']}']")).to_contain_text("obsolete")
    # a job batch retry links to its jobs in the job ledger; a skip stamps none
    jobs = page.get_by_test_id(f"batch-jobs-{retry['id']}")
    expect(jobs).to_have_attribute("href", f"/monitor/jobs?replayBatchId={retry['id']}")
    expect(page.get_by_test_id(f"batch-jobs-{skip['id']}")).to_have_count(0)
    quiet_network(page)
    shot(page, "batches-list-zh-CN")

    # the kind filter narrows the list and lives in the URL
    page.get_by_test_id("batch-filter-kind").click()
    page.locator(".ant-select-item-option").filter(has_text="作业批量重试").click()
    page.wait_for_url(re.compile(r"[?&]kind=job\.batch_retry"))
    expect(page.locator(f"{ROWS}[data-batch='{skip['id']}']")).to_have_count(0)
    expect(page.locator(f"{ROWS}[data-batch='{retry['id']}']")).to_have_count(1)
    for row in page.locator(ROWS).all():
        expect(row.locator("[data-kind]")).to_have_attribute("data-kind", "job.batch_retry")

    # a row opens its drawer (?batch=): kind, reason, request, items and results
    page.get_by_test_id(f"batch-link-{retry['id']}").click()
    page.wait_for_url(re.compile(rf"[?&]batch={retry['id']}"))
    drawer = page.get_by_test_id("batch-drawer")
    expect(drawer.get_by_test_id("batch-detail-id")).to_have_text(retry["id"])
    expect(drawer.get_by_test_id("batch-detail-kind")).to_have_text("作业批量重试")
    expect(drawer.get_by_test_id("batch-detail-state")).to_have_text("已完成")
    expect(drawer.get_by_test_id("batch-detail-reason")).to_have_text("the receiver is back")
    expect(drawer.get_by_test_id("batch-detail-request")).to_contain_text(str(UNKNOWN_JOB))
    _expect_items(page, retry)
    expect(drawer.locator("[data-result=skipped]").last).to_have_text("跳过")
    quiet_network(page)
    shot(page, "batches-drawer-zh-CN")

    # a reload keeps the filter and reopens the drawer
    page.reload()
    expect(page.get_by_test_id("batch-drawer").get_by_test_id("batch-detail-id")).to_have_text(
        retry["id"]
    )
    _expect_items(page, retry)
    assert "kind=job.batch_retry" in page.url
    # closing it removes the parameter, the filter stays
    page.keyboard.press("Escape")
    expect(page.get_by_test_id("batch-drawer")).to_have_count(0)
    assert "batch=" not in page.url and "kind=job.batch_retry" in page.url
    # clearing the filter shows every kind again
    page.get_by_test_id("batch-filter-kind").hover()
    page.locator(".ant-select-clear").click()
    expect(page.locator(f"{ROWS}[data-batch='{skip['id']}']")).to_have_count(1)
    assert "kind=" not in page.url


def test_a_linked_batch_and_its_items_in_en(
    server: Server, open_console: Opener, batches: dict[str, dict[str, Any]]
) -> None:
    skip, retention = batches["skip"], batches["retention"]
    page, _ = open_console("en", path=f"/monitor/batches?batch={skip['id']}")
    drawer = page.get_by_test_id("batch-drawer")
    expect(drawer.get_by_test_id("batch-detail-kind")).to_have_text("Job batch skip")
    expect(drawer.get_by_test_id("batch-detail-state")).to_have_text("Completed")
    _expect_items(page, skip)
    expect(drawer.locator("[data-result=skipped]")).to_have_text("Skipped")
    for text in _counts_text("en", skip["counts"]):
        expect(drawer.get_by_test_id("batch-counts")).to_contain_text(text)
    expect(page.get_by_test_id("tab-batches")).to_have_text("Batch operations")
    expect(page.locator(f"{ROWS}[data-batch='{skip['id']}'] [data-kind]")).to_have_text(
        "Job batch skip"
    )
    quiet_network(page)
    shot(page, "batches-drawer-en")
    page.keyboard.press("Escape")
    expect(drawer).to_have_count(0)

    # a retention run: its items are the policies' tables, each done
    page.get_by_test_id(f"batch-link-{retention['id']}").click()
    expect(drawer.get_by_test_id("batch-detail-kind")).to_have_text("Data retention run")
    _expect_items(page, retention)
    expect(drawer.locator("thead")).to_contain_text("Table")
    page.keyboard.press("Escape")

    # a kind with no batch: the empty text
    page.goto(server.base + "/monitor/batches?kind=recovery.external-dispatch")
    expect(page.get_by_test_id("batches-table")).to_contain_text("No batch operations of this kind")
    shot(page, "batches-empty-en")


def test_a_running_batch_is_followed_until_it_finishes(
    server: Server, open_console: Opener, batches: dict[str, dict[str, Any]]
) -> None:
    """While the batch runs the drawer reads it again every 2 s and shows its
    progress; once finished, its items. The API is real; the first two reads
    of the batch are answered as if it were still half way."""
    retry = batches["retry"]
    reads: list[str] = []
    page, _ = open_console("en", path=None)

    def half_way(route: Route) -> None:
        reads.append(route.request.url)
        if len(reads) > 2:
            route.continue_()
            return
        running = {
            **retry,
            "state": "running",
            "finishedAt": None,
            "processed": 1,
            "counts": {**retry["counts"], "done": 1, "skipped": 0, "failed": 0},
            "results": [],
        }
        route.fulfill(status=200, content_type="application/json", body=json.dumps(running))

    page.route(f"**/api/workflows/engine/batches/{retry['id']}", half_way)
    page.goto(f"{server.base}/monitor/batches?batch={retry['id']}")
    drawer = page.get_by_test_id("batch-drawer")
    expect(drawer.get_by_test_id("batch-detail-state")).to_have_text("Running")
    expect(drawer.get_by_test_id("batch-detail-running")).to_contain_text(
        f"1 of {retry['counts']['total']} items processed"
    )
    expect(drawer.get_by_test_id("batch-detail-progress")).to_contain_text(
        f"1 of {retry['counts']['total']} processed"
    )
    # the items' results come when it has finished: its counts until then
    expect(drawer.get_by_test_id("batch-items")).to_have_count(0)
    expect(drawer.get_by_test_id("batch-counts")).to_contain_text("1 done")
    shot(page, "batches-running-en")
    # two polls later (2 s apart) it has finished: items and no progress note
    expect(drawer.get_by_test_id("batch-detail-state")).to_have_text("Completed", timeout=15_000)
    assert len(reads) >= 3, reads
    expect(drawer.get_by_test_id("batch-detail-running")).to_have_count(0)
    _expect_items(page, retry)
    settled = len(reads)
    page.wait_for_timeout(3_000)
    assert len(reads) == settled  # a finished batch is not polled
