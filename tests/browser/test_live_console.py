"""The live console (issue 33 item 2) in both languages: with the job ledger
open (runtime panel and job list), an instance started through the API gives
the server's in-process worker a job (its one-second delay's wake); once the
worker has settled it (seen through the API), the job's row shows it settled
and the runtime panel's attempt count has moved within 2 s, without a reload
— the job list does not poll, so only the change stream can bring it. The
header's indicator says live; the instances list (no auto-refresh by
default) shows an instance started while it is open once the worker has run
its step, and an open instance drawer shows its instance move on."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import LANGS, Opener, Server, shot
from tests.browser.seed import wait_for

LIVE: dict[str, Any] = {
    "key": "live_console_wait",
    "name": "Live console wait",
    "form": {"fields": [{"key": "tag", "type": "string", "label": "Tag"}]},
    "nodes": [
        {"key": "start", "type": "start"},
        {"key": "wait", "type": "delay", "duration": "PT1S"},
        {"key": "end", "type": "end"},
    ],
    "edges": [{"from": "start", "to": "wait"}, {"from": "wait", "to": "end"}],
}
# long enough to open the drawer while the instance still waits
SLOW: dict[str, Any] = {
    **LIVE,
    "key": "live_console_slow",
    "name": "Live console slow wait",
    "nodes": [{**n, "duration": "PT8S"} if n["key"] == "wait" else n for n in LIVE["nodes"]],
}
INDICATOR = {"zh-CN": "实时", "en": "Live"}
SETTLED = ("succeeded", "skipped")


@pytest.fixture(scope="module")
def api(server: Server) -> Iterator[httpx.Client]:
    with server.api() as client:
        for definition in (LIVE, SLOW):
            response = client.post("/definitions", json={"definition": definition})
            assert response.status_code == 201, response.text
        yield client


def _settled_job(api: httpx.Client, instance_id: int) -> dict[str, Any] | None:
    items = api.get("/engine/jobs", params={"instanceId": instance_id}).json()["items"]
    done = [j for j in items if j["status"] in SETTLED]
    return done[0] if done else None


def _start(api: httpx.Client, key: str = LIVE["key"]) -> int:
    tag = f"live-{uuid.uuid4().hex[:8]}"
    response = api.post("/instances", json={"definitionKey": key, "form": {"tag": tag}})
    assert response.status_code == 201, response.text
    return int(response.json()["id"])


def _wait_live(page: Page, lang: str) -> None:
    indicator = page.get_by_test_id("live-indicator")
    expect(indicator).to_have_attribute("data-status", "live")
    expect(indicator).to_contain_text(INDICATOR[lang])


def _settle_and_time(api: httpx.Client) -> tuple[int, dict[str, Any], float]:
    """Start an instance; return it, its first settled job and when the API
    first showed that job settled (polled every 50 ms)."""
    instance_id = _start(api)
    job = wait_for(lambda: _settled_job(api, instance_id), 30, "the worker to settle a job")
    return instance_id, job, time.monotonic()


@pytest.mark.parametrize("lang", LANGS)
def test_a_settled_job_appears_without_reload(
    open_console: Opener, api: httpx.Client, lang: str
) -> None:
    page, _ = open_console(lang, path="/monitor/jobs")
    expect(page.get_by_test_id("jobs-table")).to_be_visible()
    _wait_live(page, lang)
    attempts = page.get_by_test_id("runtime-attempts1h")
    expect(attempts).not_to_be_empty()
    before = attempts.inner_text()
    navigations: list[str] = []
    page.on("framenavigated", lambda frame: navigations.append(frame.url))

    instance_id, job, settled_at = _settle_and_time(api)
    row = page.locator(f'[data-testid="jobs-table"] tr[data-row-key="{job["id"]}"]')
    expect(row.locator(f'[data-status="{job["status"]}"]')).to_be_visible(timeout=2_000)
    expect(attempts).not_to_have_text(before, timeout=2_000)
    took = time.monotonic() - settled_at
    assert took < 2.0, took
    assert navigations == [], "the page reloaded"
    _wait_live(page, lang)
    shot(page, f"live-jobs-{lang}")
    assert instance_id > 0


@pytest.mark.parametrize("lang", LANGS)
def test_the_instances_list_follows_a_new_instance(
    open_console: Opener, api: httpx.Client, lang: str
) -> None:
    instance_id = _start(api)
    page, _ = open_console(lang, path=f"/monitor/instances?definitionKey={LIVE['key']}")
    _wait_live(page, lang)
    expect(page.locator(f'tr[data-row-key="{instance_id}"]')).to_be_visible()
    # a second instance, started while the list is open: the worker's step
    # brings it into the list (the list's auto-refresh is off by default)
    second, _job, _settled = _settle_and_time(api)
    expect(page.locator(f'tr[data-row-key="{second}"]')).to_be_visible(timeout=2_000)
    shot(page, f"live-instances-{lang}")


@pytest.mark.parametrize("lang", LANGS)
def test_an_open_instance_drawer_follows_its_instance(
    open_console: Opener, api: httpx.Client, lang: str
) -> None:
    instance_id = _start(api, SLOW["key"])
    page, _ = open_console(lang, path=f"/monitor/instances?instance={instance_id}")
    drawer = page.get_by_test_id("instance-drawer")
    expect(drawer).to_have_attribute("data-loaded", "true")
    waiting = page.get_by_test_id("drawer-position").locator("[data-node=wait]")
    expect(waiting).to_be_visible()
    _wait_live(page, lang)
    wait_for(lambda: _settled_job(api, instance_id), 30, "the delay's wake to settle")
    expect(waiting).to_have_count(0, timeout=2_000)
    shot(page, f"live-drawer-{lang}")
