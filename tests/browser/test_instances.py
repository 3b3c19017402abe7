"""The 实例监控 Instances tab (issue 14 items 1 and 9): the page in both
languages, the filter form written to the URL and its rows and status
badges checked against the API, a saved view made the default and applied
on reload (renamed, shared, deleted), the export dialog's count and the CSV
and XLSX files opened and compared with the API, batch recovery's dry run
then real run checked through the API and the audit rows, and the `/` and
`?` keyboard shortcuts."""

from __future__ import annotations

import csv
import io
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from openpyxl import load_workbook
from playwright.sync_api import Page, expect

from tests.browser.conftest import Opener, Server, shot
from tests.browser.seed import wait_for

HOLD: dict[str, Any] = {
    "key": "instances_hold",
    "name": "Instances tab hold",
    "form": {"fields": [{"key": "tag", "type": "string", "label": "Tag"}]},
    "nodes": [
        {"key": "start", "type": "start"},
        {"key": "hold", "type": "approval", "assignees": {"users": ["zoe"]}},
        {"key": "end", "type": "end"},
    ],
    "edges": [{"from": "start", "to": "hold"}, {"from": "hold", "to": "end"}],
}
VISIBILITY = """(state) => {
  Object.defineProperty(document, "visibilityState", {value: state, configurable: true});
  document.dispatchEvent(new Event("visibilitychange"));
}"""
STATUSES = ("running", "suspended", "approved", "rejected", "withdrawn", "canceled")


@pytest.fixture(scope="module")
def api(server: Server) -> Iterator[httpx.Client]:
    with server.api() as client:
        yield client


def _start(api: httpx.Client, tag: str, n: int) -> list[int]:
    ids = []
    for _ in range(n):
        response = api.post("/instances", json={"definitionKey": HOLD["key"], "form": {"tag": tag}})
        assert response.status_code == 201, response.text
        ids.append(response.json()["id"])
    return ids


@pytest.fixture(scope="module")
def held(api: httpx.Client) -> dict[str, Any]:
    response = api.post("/definitions", json={"definition": HOLD})
    assert response.status_code == 201, response.text
    tag = f"hold-{uuid.uuid4().hex[:8]}"
    ids = _start(api, tag, 3)
    wait_for(
        lambda: (
            len(
                api.get("/instances", params={"currentNode": "hold", "keyword": tag}).json()[
                    "items"
                ]
            )
            == 3
        ),
        60,
        "the held instances at their approval",
    )
    return {"tag": tag, "ids": ids}


def _rows(page: Page) -> list[int]:
    links = page.get_by_test_id("instances-table").locator("[data-testid^=instance-link-]")
    return [int(t.removeprefix("#")) for t in links.all_inner_texts()]


def _api_ids(api: httpx.Client, **params: Any) -> list[int]:
    return [i["id"] for i in api.get("/instances", params={**params, "limit": 200}).json()["items"]]


def _view(api: httpx.Client, view_id: int) -> tuple[str, bool]:
    body = api.get(f"/views/{view_id}").json()
    return body["name"], body["shared"]


def test_instances_tab_filters_counts_views_export_and_shortcuts(
    server: Server, open_console: Opener, api: httpx.Client, held: dict[str, Any]
) -> None:
    zh, _ = open_console("zh-CN", path="/monitor/instances")
    expect(zh.get_by_test_id("tab-instances")).to_have_text("实例监控")
    expect(
        zh.get_by_test_id("instances-table").locator("[data-testid^=instance-link-]").first
    ).to_be_visible()
    shot(zh, "instances-zh-CN")

    page, _ = open_console("en", path="/monitor/instances")
    expect(page.get_by_test_id("tab-instances")).to_have_text("Instances")
    expect(page.get_by_test_id("count-all").locator("[data-count]")).not_to_have_attribute(
        "data-count", ""
    )
    # `/` focuses the search box, `?` lists the shortcuts (typed into an input, `?` is text)
    page.get_by_test_id("filter-keyword").wait_for()  # the filter bar renders after the rows
    page.locator("body").press("/")
    expect(page.get_by_test_id("filter-keyword")).to_be_focused()
    page.keyboard.type("?")
    expect(page.get_by_test_id("filter-keyword")).to_have_value("?")
    expect(page.get_by_test_id("shortcuts-help")).to_have_count(0)
    page.get_by_test_id("filter-keyword").fill("")
    page.locator("body").click(position={"x": 5, "y": 5})
    page.keyboard.press("?")
    expect(page.get_by_test_id("shortcuts-help")).to_be_visible()
    expect(page.locator(".ant-zoom-enter, .ant-zoom-appear")).to_have_count(0)  # opened
    shot(page, "instances-shortcuts-en")
    page.keyboard.press("Escape")
    expect(page.get_by_test_id("shortcuts-help")).to_have_count(0)

    # the filter form writes the URL; the rows and the badges are the API's
    page.get_by_test_id("filter-definition").fill(HOLD["key"])
    page.get_by_test_id("filter-node").fill("hold")
    page.get_by_test_id("filter-apply").click()
    page.wait_for_url(
        lambda url: "definitionKey=instances_hold" in url and "currentNode=hold" in url
    )
    flt = {"definitionKey": HOLD["key"], "currentNode": "hold"}
    expected = _api_ids(api, **flt)
    assert set(held["ids"]) <= set(expected)
    wait_for(lambda: _rows(page) == expected[:20], 20, "the filtered rows")
    counts = api.get("/instances/counts", params=flt).json()
    expect(page.get_by_test_id("count-all").locator("[data-count]")).to_have_attribute(
        "data-count", str(counts["total"])
    )
    for status in STATUSES:
        expect(page.get_by_test_id(f"count-{status}").locator("[data-count]")).to_have_attribute(
            "data-count", str(counts["counts"][status])
        )
    shot(page, "instances-filtered-en")

    # `r` refetches; auto-refresh every 5 s refetches, and pauses while the tab is hidden
    def listed(request: Any) -> bool:
        return "/api/workflows/instances?" in request.url

    with page.expect_request(listed):
        page.locator("body").press("r")
    page.get_by_test_id("auto-refresh").get_by_text("5 s").click()
    with page.expect_request(listed, timeout=12_000):
        pass
    page.evaluate(VISIBILITY, "hidden")
    expect(page.get_by_test_id("refresh-state")).to_have_text("Auto-refresh paused (tab hidden)")
    page.evaluate(VISIBILITY, "visible")
    page.get_by_test_id("auto-refresh").get_by_text("Off").click()

    # save as my default view; opening the tab without filters applies it
    name = f"held {held['tag']}"
    page.get_by_test_id("view-save-as").click()
    page.get_by_test_id("view-name").fill(name)
    page.get_by_test_id("view-is-default").check()
    page.get_by_test_id("view-dialog-ok").click()
    page.wait_for_url(lambda url: "view=" in url)
    views = api.get("/views", params={"scope": "instances"}).json()["items"]
    view = next(v for v in views if v["name"] == name)
    assert view["isDefault"] and view["filters"] == flt, view
    page.goto(server.base + "/monitor/instances")
    page.wait_for_url(lambda url: f"view={view['id']}" in url and "currentNode=hold" in url)
    wait_for(lambda: _rows(page) == expected[:20], 20, "the default view's rows")
    page.get_by_test_id("view-rename").click()
    page.get_by_test_id("view-name").fill(name + " renamed")
    page.get_by_test_id("view-dialog-ok").click()
    page.get_by_test_id("view-share").click()
    wait_for(
        lambda: _view(api, view["id"]) == (name + " renamed", True),
        20,
        "the renamed, shared view",
    )

    # export: the dialog states the count and the cap; both files hold the API's rows
    page.get_by_test_id("open-export").click()
    expect(page.get_by_test_id("export-total")).to_have_attribute(
        "data-count", str(counts["total"])
    )
    expect(page.get_by_test_id("export-cap")).to_contain_text("10,000")
    shot(page, "instances-export-en")
    with page.expect_download() as download:
        page.get_by_test_id("export-ok").click()
    text = Path(download.value.path()).read_text(encoding="utf-8-sig")
    assert download.value.suggested_filename.endswith(".csv")
    assert [int(r["id"]) for r in csv.DictReader(io.StringIO(text))] == expected
    page.get_by_test_id("open-export").click()
    page.get_by_test_id("export-xlsx").click()
    with page.expect_download() as download:
        page.get_by_test_id("export-ok").click()
    assert download.value.suggested_filename.endswith(".xlsx")
    sheet = load_workbook(
        io.BytesIO(Path(download.value.path()).read_bytes()), read_only=True
    ).active
    assert sheet is not None
    rows = list(sheet.iter_rows(values_only=True))
    assert rows[0][0] == "id"
    assert [r[0] for r in rows[1:] if isinstance(r[0], int)] == expected

    page.get_by_test_id("view-delete").click()
    page.get_by_test_id("view-delete-ok").click()
    wait_for(lambda: api.get(f"/views/{view['id']}").status_code == 404, 20, "the deleted view")


def test_batch_recovery_dry_run_then_run(
    server: Server, open_console: Opener, api: httpx.Client, held: dict[str, Any]
) -> None:
    tag = f"recover-{uuid.uuid4().hex[:8]}"
    ids = _start(api, tag, 3)
    wait_for(
        lambda: len(_api_ids(api, currentNode="hold", keyword=tag)) == 3,
        60,
        "the instances at hold",
    )
    page, _ = open_console(
        "zh-CN", path=f"/monitor/instances?definitionKey={HOLD['key']}&keyword={tag}"
    )
    wait_for(lambda: sorted(_rows(page)) == sorted(ids), 20, "the rows to recover")
    page.get_by_test_id("open-recover").click()
    page.get_by_test_id("recover-node").fill("hold")
    page.get_by_test_id("recover-stuck").fill("0")
    page.get_by_test_id("recover-scope-matching").click()
    expect(page.get_by_test_id("recover-scope-matching")).to_contain_text("3")
    expect(page.get_by_test_id("recover-scope-text")).to_contain_text(tag)
    expect(page.get_by_test_id("recover-dry-run")).to_be_disabled()  # no reason yet
    page.get_by_test_id("recover-reason").fill("   ")
    expect(page.get_by_test_id("recover-dry-run")).to_be_disabled()
    reason = f"approver left the company ({tag})"
    page.get_by_test_id("recover-reason").fill(reason)
    page.get_by_test_id("recover-rate").fill("10")  # 3 at 10 per second: 300 ms
    page.get_by_test_id("recover-dry-run").click()
    plan = page.get_by_test_id("recover-plan-table")
    expect(plan.locator("[data-outcome=advanced]")).to_have_count(3)
    expect(page.get_by_test_id("batch-estimate")).to_have_attribute("data-rate", "10")
    expect(page.get_by_test_id("batch-estimate")).to_contain_text("300 毫秒")
    shot(page, "instances-recover-plan-zh-CN")
    # a dry run changes nothing
    assert sorted(_api_ids(api, currentNode="hold", keyword=tag, status="running")) == sorted(ids)

    page.get_by_test_id("recover-run").click()
    expect(page.get_by_test_id("recover-confirm-text")).to_contain_text(tag)
    expect(page.get_by_test_id("recover-confirm-text")).to_contain_text(reason)
    page.get_by_test_id("recover-confirm-ok").click()
    expect(page.get_by_test_id("recover-confirm-text")).to_have_count(0)
    result = page.get_by_test_id("recover-result-table")
    expect(result.locator("[data-outcome=advanced]")).to_have_count(3)
    shot(page, "instances-recover-result-zh-CN")
    assert _api_ids(api, currentNode="hold", keyword=tag) == []
    runs = api.get("/engine/batches", params={"kind": "instance.batch_recover"}).json()["items"]
    ran = [b for b in runs if not b["dryRun"] and b["reason"] == reason]
    assert [b["request"]["rate"] for b in ran] == [10]
    for iid in ids:
        bundle = api.get(f"/instances/{iid}/diagnostic-bundle").json()
        tasks = bundle["diagnostics"]["tasks"]
        assert [t["status"] for t in tasks if t["nodeKey"] == "hold"] == ["skipped"], tasks
        recovered = [a for a in bundle["audit"] if a["action"] == "instance.recover"]
        assert len(recovered) == 1 and recovered[0]["reason"] == reason, bundle["audit"]
