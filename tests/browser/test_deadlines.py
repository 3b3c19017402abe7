"""Deadlines and escalation in the console (issue 31 item 4), in both
languages: a task whose deadline (due after 1 s) has passed is escalated by
the running server's ``task_timeout`` jobs — a reminder, then a transfer to
the assignee's manager (set with ``flowledger user set-manager``) — and the
console shows it: the instances list filtered by ``deadline=escalated``
badges the instance overdue and escalated, and the manager's My tasks
badges the task; the analytics timeouts panel counts it escalated.
Screenshots of each go to the browser artifacts."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from playwright.sync_api import expect

from tests.browser.conftest import LANGS, Opener, Server, shot
from tests.browser.seed import wait_for


@pytest.fixture(scope="module")
def api(server: Server) -> Iterator[httpx.Client]:
    with server.api() as client:
        yield client


def _definition(key: str, clerk: str) -> dict[str, object]:
    return {
        "key": key,
        "name": f"deadline {key}",
        "nodes": [
            {"key": "start", "type": "start"},
            {
                "key": "review",
                "type": "approval",
                "assignees": {"users": [clerk]},
                "deadline": {
                    "due": "PT1S",
                    "escalation": [
                        {"after": "PT0S", "action": "remind"},
                        {"after": "PT1S", "action": "transfer", "to": "manager"},
                    ],
                },
            },
            {"key": "end", "type": "end"},
        ],
        "edges": [{"from": "start", "to": "review"}, {"from": "review", "to": "end"}],
    }


@pytest.mark.parametrize("lang", LANGS)
def test_an_overdue_task_escalates_and_shows_as_escalated(
    open_console: Opener, api: httpx.Client, server: Server, lang: str
) -> None:
    suffix = lang.replace("-", "_").lower()
    key, clerk, boss = f"deadline_{suffix}", f"clerk_{suffix}", f"boss_{suffix}"
    server.cli("token", "create", "--user", clerk)
    boss_token = server.cli("token", "create", "--user", boss).strip()
    server.cli("user", "set-manager", clerk, boss)
    deployed = api.post("/definitions", json={"definition": _definition(key, clerk)})
    assert deployed.status_code == 201, deployed.text
    started = api.post("/instances", json={"definitionKey": key, "form": {}})
    assert started.status_code == 201, started.text
    iid = int(started.json()["id"])

    def escalated() -> dict[str, object] | None:
        [task] = api.get("/tasks", params={"assignee": "*", "instanceId": iid}).json()["items"]
        return task if task["escalatedAt"] and task["assignee"] == boss else None

    task = wait_for(escalated, 60, "the escalation's transfer")
    assert task["overdue"] and task["escalationStep"] == 2
    listed = api.get("/instances", params={"deadline": "escalated", "definitionKey": key})
    assert [i["id"] for i in listed.json()["items"]] == [iid]

    page, _ = open_console(lang, path=f"/monitor/instances?definitionKey={key}")
    page.get_by_test_id("filter-deadline").click()
    label = "已升级" if lang == "zh-CN" else "Escalated"
    page.locator(".ant-select-dropdown:visible .ant-select-item-option", has_text=label).click()
    page.get_by_test_id("filter-apply").click()
    expect(page).to_have_url(
        f"{server.base}/monitor/instances?definitionKey={key}&deadline=escalated"
    )
    row = page.locator(f"tr[data-row-key='{iid}']")
    expect(row).to_be_visible()
    expect(row.get_by_test_id("deadline-escalated")).to_have_text(label)
    expect(row.get_by_test_id("deadline-overdue")).to_have_text(
        "已逾期" if lang == "zh-CN" else "Overdue"
    )
    shot(page, f"deadline-instances-{lang}")

    page.goto(f"{server.base}/monitor/analytics")  # the timeouts panel counts it
    panel = page.get_by_test_id("panel-timeouts")
    expect(panel.get_by_test_id("timeouts-escalated")).not_to_have_text("0")
    expect(panel.get_by_test_id("deadline-escalated").first).to_have_text(label)
    panel.scroll_into_view_if_needed()
    shot(page, f"deadline-analytics-{lang}")

    mine, _ = open_console(lang, token=boss_token, path="/tasks")
    mine_row = mine.locator(f"tr[data-row-key='{task['id']}']")
    expect(mine_row.get_by_test_id("deadline-escalated")).to_have_text(label)
    shot(mine, f"deadline-my-tasks-list-{lang}")
    mine.get_by_test_id(f"task-link-{task['id']}").click()
    expect(mine.get_by_test_id("task-drawer").get_by_test_id("deadline-escalated")).to_be_visible()
    shot(mine, f"deadline-my-tasks-drawer-{lang}")
