"""Suspend and pause by scope from the console (issue 31 item 3), in both
languages: a definition's running instances at one node are suspended from
the process definitions page (the dry run's count first, then the run with a
reason, at a rate whose estimate the preview shows — issue 29 item 4) and
resumed; a pool is paused from the runtime panel of the job ledger (who,
why, since shown there and on the engine diagnostics page) and resumed.
Every effect is checked through the API; screenshots of each dialog and
panel go to the browser artifacts."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import LANGS, Opener, Server, shot
from tests.browser.seed import wait_for

POOL = "workflow-ledger-outbound"


def _definition(key: str) -> dict[str, object]:
    return {
        "key": key,
        "name": f"scope {key}",
        "nodes": [
            {"key": "start", "type": "start"},
            {"key": "desk", "type": "handle", "assignees": {"users": ["hal"]}},
            {"key": "review", "type": "approval", "assignees": {"users": ["rita"]}},
            {"key": "end", "type": "end"},
        ],
        "edges": [
            {"from": "start", "to": "desk"},
            {"from": "desk", "to": "review"},
            {"from": "review", "to": "end"},
        ],
    }


@pytest.fixture(scope="module")
def api(server: Server) -> Iterator[httpx.Client]:
    with server.api() as client:
        yield client


def _statuses(api: httpx.Client, ids: list[int]) -> list[str]:
    return [api.get(f"/instances/{i}").json()["status"] for i in ids]


def _world(api: httpx.Client, key: str) -> dict[str, list[int]]:
    """Three running instances of ``key``: two at desk, one moved on to review."""
    deployed = api.post("/definitions", json={"definition": _definition(key)})
    assert deployed.status_code == 201, deployed.text
    ids = []
    for _ in range(3):
        started = api.post("/instances", json={"definitionKey": key, "form": {}})
        assert started.status_code == 201, started.text
        ids.append(int(started.json()["id"]))
    wait_for(
        lambda: (
            len(
                api.get("/instances", params={"currentNode": "desk", "definitionKey": key}).json()[
                    "items"
                ]
            )
            == 3
        ),
        60,
        "the instances at desk",
    )
    moved = api.post(f"/instances/{ids[2]}/force-jump", json={"target": "review", "reason": "x"})
    assert moved.status_code == 200, moved.text
    return {"desk": ids[:2], "review": [ids[2]]}


def _pick(page: Page, test_id: str, text: str) -> None:
    page.get_by_test_id(test_id).click()
    page.locator(
        ".ant-select-dropdown:visible .ant-select-item-option", has_text=text
    ).first.click()


@pytest.mark.parametrize("lang", LANGS)
def test_suspend_and_resume_a_definition_from_the_console(
    open_console: Opener, api: httpx.Client, lang: str
) -> None:
    key = f"scope_{lang.replace('-', '_').lower()}"
    world = _world(api, key)
    page, _ = open_console(lang, path=f"/definitions?key={key}")
    page.get_by_test_id("scope-suspend-open").click()
    dialog = page.get_by_test_id("scope-dialog-suspend")
    expect(dialog).to_be_visible()
    expect(page.get_by_test_id("scope-count")).to_contain_text("3")  # every running one
    _pick(page, "scope-node", "desk")
    expect(page.get_by_test_id("scope-count")).to_contain_text("2")  # only those at desk
    for iid in world["desk"]:
        expect(page.get_by_test_id("scope-count")).to_contain_text(f"#{iid}")
    estimate = page.get_by_test_id("batch-estimate")
    expect(estimate).to_have_attribute("data-rate", "")  # no rate: at once
    # a rate: the preview says how long the run takes at it (2 at 4 per second)
    page.get_by_test_id("scope-rate").fill("4")
    expect(estimate).to_have_attribute("data-rate", "4")
    expect(estimate).to_contain_text("500")  # 500 ms / 500 毫秒
    expect(page.get_by_test_id("scope-run")).to_be_disabled()  # a reason is required
    page.get_by_test_id("scope-reason").fill("quarterly audit")
    shot(page, f"scope-suspend-preview-{lang}")
    page.get_by_test_id("scope-run").click()
    expect(page.get_by_test_id("scope-result")).to_be_visible()
    shot(page, f"scope-suspend-result-{lang}")
    assert _statuses(api, world["desk"]) == ["suspended", "suspended"]
    batches = api.get("/engine/batches", params={"kind": "definition.suspend_all"}).json()
    (suspended,) = [b for b in batches["items"] if b["request"]["definitionKey"] == key]
    assert suspended["request"]["rate"] == 4
    assert _statuses(api, world["review"]) == ["running"]  # the node filter held
    page.get_by_test_id("scope-close").click()

    page.get_by_test_id("scope-resume-open").click()
    expect(page.get_by_test_id("scope-dialog-resume")).to_be_visible()
    expect(page.get_by_test_id("scope-count")).to_contain_text("2")
    shot(page, f"scope-resume-preview-{lang}")
    page.get_by_test_id("scope-run").click()
    expect(page.get_by_test_id("scope-result")).to_be_visible()
    assert _statuses(api, world["desk"] + world["review"]) == ["running"] * 3


@pytest.mark.parametrize("lang", LANGS)
def test_pause_and_resume_a_pool_from_the_runtime_panel(
    open_console: Opener, api: httpx.Client, server: Server, lang: str
) -> None:
    page, _ = open_console(lang, path="/monitor/jobs")
    panel = page.get_by_test_id("paused-scopes")
    expect(panel).to_be_visible()
    page.get_by_test_id("pause-open").click()
    expect(page.get_by_test_id("pause-dialog")).to_be_visible()
    _pick(page, "pause-value", POOL)
    page.get_by_test_id("pause-reason").fill(f"vendor outage ({lang})")
    shot(page, f"scope-pause-dialog-{lang}")
    page.get_by_test_id("pause-submit").click()
    row = page.get_by_test_id(f"paused-pool-{POOL}")
    expect(row).to_be_visible()
    expect(row).to_contain_text(f"vendor outage ({lang})")
    (pause,) = api.get("/engine/job-pauses").json()["items"]
    assert (pause["scope"], pause["value"], pause["reason"]) == (
        "pool",
        POOL,
        f"vendor outage ({lang})",
    )
    expect(row).to_contain_text(pause["pausedBy"])  # who paused it
    shot(page, f"scope-pause-panel-{lang}")

    page.goto(f"{server.base}/monitor/engine")
    paused = page.get_by_test_id(f"engine-paused-pool-{POOL}")
    expect(paused).to_contain_text(f"vendor outage ({lang})")
    shot(page, f"scope-pause-engine-{lang}")

    page.goto(f"{server.base}/monitor/jobs")
    page.get_by_test_id(f"resume-pool-{POOL}").click()
    expect(page.get_by_test_id(f"paused-pool-{POOL}")).to_have_count(0)
    assert api.get("/engine/job-pauses").json()["items"] == []
