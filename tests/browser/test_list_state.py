"""The list shell's URL state (issue 29 item 6, components/useListState):
on the instance list, Next writes the page's cursor into the URL (Back
returns to page 1), an instance's drawer opens over page 2, a reload keeps
the filter, the page and the drawer; a filter changed with the drawer open
(`/`, type, Enter) returns to page 1 and keeps the drawer's `?instance=`,
and a reload keeps that too."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, urlparse

import httpx
import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import Opener, Server
from tests.browser.seed import wait_for
from tests.browser.test_instances import HOLD as INSTANCES_HOLD

PAGE_SIZE = 20  # INSTANCES_PAGE_SIZE (web/src/api/queries/instances.ts)
# the instances tab's held approval, under a key of its own (its instances are all ours)
HOLD: dict[str, Any] = {
    **INSTANCES_HOLD,
    "key": f"lists_hold_{uuid.uuid4().hex[:6]}",
    "name": "List state hold",
}


@pytest.fixture(scope="module")
def api(server: Server) -> Iterator[httpx.Client]:
    with server.api() as client:
        yield client


@pytest.fixture(scope="module")
def held(api: httpx.Client) -> str:
    """PAGE_SIZE + 3 instances of a new definition, all with one tag: two pages."""
    response = api.post("/definitions", json={"definition": HOLD})
    assert response.status_code == 201, response.text
    tag = f"lists-{uuid.uuid4().hex[:8]}"
    for _ in range(PAGE_SIZE + 3):
        started = api.post("/instances", json={"definitionKey": HOLD["key"], "form": {"tag": tag}})
        assert started.status_code == 201, started.text
    wait_for(
        lambda: len(_api_ids(api, definitionKey=HOLD["key"], keyword=tag)) == PAGE_SIZE + 3,
        60,
        "the held instances",
    )
    return tag


def _api_ids(api: httpx.Client, **params: Any) -> list[int]:
    return [i["id"] for i in api.get("/instances", params={**params, "limit": 200}).json()["items"]]


def _rows(page: Page) -> list[int]:
    links = page.get_by_test_id("instances-table").locator("[data-testid^=instance-link-]")
    return [int(t.removeprefix("#")) for t in links.all_inner_texts()]


def _query(page: Page) -> dict[str, list[str]]:
    return parse_qs(urlparse(page.url).query)


def test_filters_and_page_live_in_the_url(
    server: Server, open_console: Opener, api: httpx.Client, held: str
) -> None:
    key = HOLD["key"]
    expected = _api_ids(api, definitionKey=key)
    assert len(expected) == PAGE_SIZE + 3
    page, _ = open_console("en", path=f"/monitor/instances?definitionKey={key}")
    number = page.get_by_test_id("page-instances").get_by_test_id("page-number")
    wait_for(lambda: _rows(page) == expected[:PAGE_SIZE], 20, "page 1")
    expect(number).to_have_text("Page 1")

    # Next: page 2, its cursor in the URL; Back is page 1 again, Forward page 2
    page.get_by_test_id("page-next").click()
    page.wait_for_url(lambda url: "cursor=" in url)
    wait_for(lambda: _rows(page) == expected[PAGE_SIZE:], 20, "page 2")
    expect(number).to_have_text("Page 2")
    page.go_back()
    expect(number).to_have_text("Page 1")
    wait_for(lambda: _rows(page) == expected[:PAGE_SIZE], 20, "page 1 after Back")
    page.go_forward()
    expect(number).to_have_text("Page 2")

    # an instance of page 2 opens its drawer; a reload keeps filter, page and drawer
    iid = expected[PAGE_SIZE]
    page.get_by_test_id("instances-table").get_by_test_id(f"instance-link-{iid}").click()
    drawer = page.get_by_test_id("instance-drawer")
    expect(drawer).to_have_attribute("data-loaded", "true")
    page.reload()
    expect(drawer).to_have_attribute("data-loaded", "true")
    query = _query(page)
    assert query["definitionKey"] == [key] and query["instance"] == [str(iid)], query
    assert len(query["cursor"]) == 1, query
    expect(number).to_have_text("Page 2")
    wait_for(lambda: _rows(page) == expected[PAGE_SIZE:], 20, "page 2 after a reload")
    expect(page.get_by_test_id("filter-definition")).to_have_value(key)

    # with the drawer open, `/` is the search box: a new filter is page 1, drawer kept
    page.get_by_test_id("filter-keyword").wait_for()
    page.locator("body").press("/")
    expect(page.get_by_test_id("filter-keyword")).to_be_focused()
    page.keyboard.type(held)
    page.keyboard.press("Enter")
    page.wait_for_url(lambda url: f"keyword={held}" in url)
    query = _query(page)
    assert "cursor" not in query, query
    assert query["definitionKey"] == [key] and query["instance"] == [str(iid)], query
    expect(number).to_have_text("Page 1")
    expect(page.get_by_test_id("page-previous")).to_be_disabled()
    filtered = _api_ids(api, definitionKey=key, keyword=held)
    wait_for(lambda: _rows(page) == filtered[:PAGE_SIZE], 20, "page 1 of the new filter")
    expect(drawer).to_have_attribute("data-loaded", "true")

    # a reload keeps both filters (and the drawer)
    page.reload()
    expect(drawer).to_have_attribute("data-loaded", "true")
    expect(page.get_by_test_id("filter-keyword")).to_have_value(held)
    expect(page.get_by_test_id("filter-definition")).to_have_value(key)
    expect(number).to_have_text("Page 1")
    wait_for(lambda: _rows(page) == filtered[:PAGE_SIZE], 20, "the filter after a reload")


def test_a_filter_form_shows_the_urls_filters_after_reset_and_back(open_console: Opener) -> None:
    """The job ledger's form after Reset and after Back shows what the list
    is filtered by (it kept the typed keyword and applied it again with the
    next search); the ticket list's instance filter is one history entry,
    applied on Enter, and Back clears the box with the URL."""
    page, _ = open_console("en", path="/monitor/jobs")
    keyword = page.get_by_test_id("filter-keyword")
    keyword.fill("refused")
    page.get_by_test_id("filter-apply").click()
    page.wait_for_url(lambda url: "keyword=refused" in url)
    page.get_by_test_id("filter-reset").click()
    page.wait_for_url(lambda url: "keyword" not in url)
    expect(page.get_by_test_id("filter-keyword")).to_have_value("")
    page.get_by_test_id("filter-instance").fill("27")
    page.get_by_test_id("filter-apply").click()
    page.wait_for_url(lambda url: "instanceId=27" in url)
    assert "keyword" not in _query(page), page.url
    page.go_back()  # the Reset's URL: no filter, and an empty form
    page.wait_for_url(lambda url: "instanceId" not in url)
    expect(page.get_by_test_id("filter-instance")).to_have_value("")
    page.go_back()  # the keyword's URL: the form shows it again
    expect(page.get_by_test_id("filter-keyword")).to_have_value("refused")

    page.goto(page.url.split("/monitor/")[0] + "/monitor/compensation")
    box = page.get_by_test_id("ticket-filter-instance")
    box.fill("123")
    page.wait_for_timeout(500)  # time for a per-digit URL change to show, were there one
    assert "instanceId" not in _query(page), page.url
    box.press("Enter")
    page.wait_for_url(lambda url: "instanceId=123" in url)
    page.go_back()
    page.wait_for_url(lambda url: "instanceId" not in url)
    expect(page.get_by_test_id("ticket-filter-instance")).to_have_value("")
