"""Interventions in the drawer's timeline (issue 31 item 2), in both
languages: an operator reassigns a pending task through the drawer's tasks
tab, and a force jump is done through the API; the engine trace tab then
shows both as interventions — set apart by their tag and icon, with who,
the reason and each change before → after, worded in the page's language —
among the engine's rows in time order, and the "interventions only" switch
keeps them alone. Checked against the API's trace; screenshots of both
languages."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import LANGS, Opener, Server, shot
from tests.browser.seed import wait_for

HOLD: dict[str, Any] = {
    "key": "interventions_hold",
    "name": "Interventions hold",
    "form": {"fields": [{"key": "tag", "type": "string", "label": "Tag"}]},
    "nodes": [
        {"key": "start", "type": "start"},
        {"key": "manager", "type": "approval", "assignees": {"users": ["carol"]}},
        {"key": "end", "type": "end"},
    ],
    "edges": [{"from": "start", "to": "manager"}, {"from": "manager", "to": "end"}],
}
WORDS = {
    "zh-CN": {
        "tag": "人工干预",
        "only": "仅人工干预",
        "reassign": "转办",
        "force_jump": "强制跳转",
        "assignee": "处理人",
        "node": "节点",
        "reason": "原因\uff1a",  # the full-width colon of the zh-CN text
        "pending": "待处理",
        "skipped": "已跳过",
    },
    "en": {
        "tag": "Intervention",
        "only": "Interventions only",
        "reassign": "Reassign",
        "force_jump": "Force jump",
        "assignee": "Assignee",
        "node": "Node",
        "reason": "Reason: ",
        "pending": "Pending",
        "skipped": "Skipped",
    },
}


@pytest.fixture(scope="module")
def api(server: Server) -> Iterator[httpx.Client]:
    with server.api() as client:
        response = client.post("/definitions", json={"definition": HOLD})
        assert response.status_code == 201, response.text
        yield client


def _start(api: httpx.Client) -> tuple[int, int]:
    """A new instance waiting at ``manager``, and its pending task."""
    response = api.post(
        "/instances",
        json={"definitionKey": HOLD["key"], "form": {"tag": uuid.uuid4().hex[:8]}},
    )
    assert response.status_code == 201, response.text
    iid = int(response.json()["id"])

    def pending() -> list[dict[str, Any]]:
        doc = api.get(f"/instances/{iid}/diagnostics", params={"view": "tasks"}).json()
        return [t for t in doc["tasks"] if t["status"] == "pending"]

    wait_for(lambda: len(pending()) == 1, 60, "the task at the manager's approval")
    return iid, int(pending()[0]["id"])


def _interventions(api: httpx.Client, iid: int) -> list[dict[str, Any]]:
    response = api.get(
        f"/instances/{iid}/diagnostics", params={"view": "trace", "kind": "intervention"}
    )
    response.raise_for_status()
    return list(response.json()["trace"]["items"])


def _reassign_in_drawer(page: Page, task_id: int, to: str, reason: str) -> None:
    page.get_by_test_id("drawer-tab-tasks").click()
    page.get_by_test_id(f"task-reassign-{task_id}").click()
    page.get_by_test_id("reassign-to").fill(to)
    page.get_by_test_id("repair-reason").fill(reason)
    page.get_by_test_id("repair-confirm").click()
    expect(page.get_by_test_id("reassign-dialog")).to_have_count(0)


def _change(row: Any, field: str) -> Any:
    return row.locator(f"[data-testid=intervention-change][data-field='{field}']")


def test_interventions_in_the_drawer_timeline(
    server: Server, open_console: Opener, api: httpx.Client
) -> None:
    for lang in LANGS:
        words = WORDS[lang]
        iid, task_id = _start(api)
        page, _watch = open_console(lang, path=f"/monitor/jobs?instance={iid}")
        expect(page.get_by_test_id("instance-drawer")).to_have_attribute("data-loaded", "true")
        reassign_reason = f"carol is away ({lang})"
        _reassign_in_drawer(page, task_id, "dave", reassign_reason)
        jump_reason = f"signed on paper ({lang})"
        jumped = api.post(
            f"/instances/{iid}/force-jump", json={"target": "end", "reason": jump_reason}
        )
        assert jumped.status_code == 200, jumped.text
        expected = _interventions(api, iid)
        assert [(r["action"], r["reason"]) for r in expected] == [
            ("reassign", reassign_reason),
            ("force_jump", jump_reason),
        ]
        actor = expected[0]["actor"]

        # the drawer again, now that the instance has ended
        page.goto(f"{server.base}/monitor/jobs?instance={iid}")
        expect(page.get_by_test_id("instance-drawer")).to_have_attribute("data-loaded", "true")
        page.get_by_test_id("drawer-tab-trace").click()
        view = page.get_by_test_id("view-trace")
        expect(view).to_be_visible()
        rows = view.get_by_test_id("trace-row")
        marked = view.locator("[data-testid=trace-row][data-kind=intervention]")
        expect(marked).to_have_count(2)
        assert rows.count() > 2  # among the engine's rows
        # in time order: the reassign before the force jump, both in the page's words
        reassign, jump = marked.nth(0), marked.nth(1)
        expect(reassign).to_have_attribute("data-action", "reassign")
        expect(jump).to_have_attribute("data-action", "force_jump")
        for row in (reassign, jump):
            expect(row.get_by_test_id("intervention-tag")).to_have_text(words["tag"])
            expect(row.get_by_test_id("intervention-icon")).to_be_visible()
            expect(row.get_by_test_id("intervention-actor")).to_contain_text(actor)
        expect(reassign.get_by_test_id("intervention-action")).to_have_text(words["reassign"])
        expect(reassign.get_by_test_id("intervention-reason")).to_have_text(
            words["reason"] + reassign_reason
        )
        assignee = _change(reassign, "assignee")
        expect(assignee).to_contain_text(words["assignee"])
        expect(assignee.get_by_test_id("change-before")).to_have_text("carol")
        expect(assignee.get_by_test_id("change-after")).to_have_text("dave")
        expect(jump.get_by_test_id("intervention-action")).to_have_text(words["force_jump"])
        expect(jump.get_by_test_id("intervention-reason")).to_contain_text(jump_reason)
        node = _change(jump, "node")
        expect(node).to_contain_text(words["node"])
        expect(node.get_by_test_id("change-before")).to_have_text("manager")
        expect(node.get_by_test_id("change-after")).to_have_text("end")
        status = _change(jump, f"task.{task_id}.status")
        expect(status.get_by_test_id("change-before")).to_have_text(words["pending"])
        expect(status.get_by_test_id("change-after")).to_have_text(words["skipped"])
        jump.scroll_into_view_if_needed()
        shot(page, f"drawer-trace-interventions-{lang}")

        # the filter: interventions only, then everything again
        expect(view).to_contain_text(words["only"])
        page.get_by_test_id("interventions-only").click()
        expect(rows).to_have_count(2)
        expect(marked).to_have_count(2)
        expect(rows.nth(0)).to_have_attribute("data-action", "reassign")
        shot(page, f"drawer-trace-interventions-only-{lang}")
        page.get_by_test_id("interventions-only").click()
        expect(marked).to_have_count(2)
        expect(rows).not_to_have_count(2)
