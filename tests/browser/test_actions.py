"""Every console action once, its effect checked through the API (issue 13
items 4 to 7, 9): the job ledger (URL filters, live workers card, auto-refresh,
drawer with attempts and chain, bundle download, retry, skip, batch retry,
batch skip, clusters and replay with progress), compensation tickets (note,
attachment up and down, resume, retry, resolve, terminate, disabled reasons),
subscriptions, trigger executions, connectors, automation rules, definitions
(diagram, deploy with problems, deploy, start from the generated form) and
my tasks (approve, reject, handle, transfer, comment)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Locator, Page, expect

from tests.browser.conftest import Opener, Server, quiet_network, shot
from tests.browser.seed import seed, wait_for


@pytest.fixture(scope="module")
def api(server: Server) -> Iterator[httpx.Client]:
    with server.api() as client:
        yield client


@pytest.fixture(scope="module")
def seeded(api: httpx.Client) -> dict[str, list[int]]:
    return seed(api)


def _job(api: httpx.Client, job_id: int) -> dict[str, Any]:
    return dict(api.get(f"/engine/jobs/{job_id}").json())


def _dead(api: httpx.Client, n: int) -> list[dict[str, Any]]:
    items = api.get(
        "/engine/jobs", params={"status": "dead", "type": "trigger_dispatch", "limit": 50}
    ).json()["items"]
    assert len(items) >= n, items
    return list(items[:n])


def _expect_rows(page: Page, rows: Locator, count: int) -> None:
    """``rows`` reach ``count``; when not, the failure names what the page says
    (an error message, the dialog still open) instead of only the count."""
    try:
        expect(rows).to_have_count(count)
    except AssertionError:
        said = page.locator(
            ".ant-message-notice, .ant-notification-notice, .ant-alert, .ant-form-item-explain"
        ).all_inner_texts()
        dialogs = page.locator(".ant-modal-title").all_inner_texts()
        raise AssertionError(
            f"expected {count} rows; messages on the page: {said}; open dialogs: {dialogs}"
        ) from None


def _press_ok(page: Page, test_id: str) -> None:
    """Press a dialog's OK button. Twice in CI (loaded, two cores) the dialog
    stayed open after the click with no request in flight (the button not
    loading, no message, no field error): the click never reached it. A
    second press is what the user would do and cannot send twice — the
    button ignores clicks while its request runs and the dialog closes when
    it ends."""
    button = page.get_by_test_id(test_id)
    button.click()
    page.wait_for_timeout(3000)
    if (
        button.count()
        and button.is_visible()
        and "ant-btn-loading" not in (button.get_attribute("class") or "")
    ):
        button.click()


def _confirm(page: Page) -> None:
    page.get_by_test_id("confirm-ok").click()
    expect(page.get_by_test_id("confirm-ok")).to_have_count(0)


# ---------------------------------------------------------------- job ledger


def test_job_ledger_filters_panel_and_drawer(
    server: Server, open_console: Opener, api: httpx.Client, seeded: dict
) -> None:
    page, _ = open_console("en", path="/monitor/jobs?status=dead&type=trigger_dispatch")
    page.get_by_test_id("runtime-dead").wait_for()
    rows = page.locator("[data-testid=jobs-table] tbody tr.ant-table-row")
    rows.first.wait_for()
    expected = [
        j["id"]
        for j in api.get(
            "/engine/jobs", params={"status": "dead", "type": "trigger_dispatch", "limit": 20}
        ).json()["items"]
    ]
    assert [int(k) for k in rows.evaluate_all("rs => rs.map(r => r.dataset.rowKey)")] == expected
    # keyword filter through the form lands in the URL
    page.get_by_test_id("filter-keyword").fill("refused")
    page.get_by_test_id("filter-apply").click()
    page.wait_for_url("**keyword=refused**")
    assert "status=dead" in page.url
    # the live workers card: each node's slots and heartbeat age. Hovered once
    # the filter's navigation has settled (its requests done): one CI run on a
    # loaded machine hovered during it and the popover never opened (not
    # reproduced in a dozen runs here, with or without load)
    quiet_network(page)
    page.get_by_test_id("runtime-liveWorkers").hover()
    card = page.get_by_test_id("workers-card")
    card.wait_for()
    nodes = api.get("/engine/workers").json()["items"]
    assert nodes and nodes[0]["id"] in card.inner_text()
    # refreshed every 5 s without a reload
    before = page.get_by_test_id("runtime-updated").inner_text()
    expect(page.get_by_test_id("runtime-updated")).not_to_have_text(before, timeout=8_000)
    shot(page, "action-jobs-filtered-en")
    # the drawer: every attempt of every generation, the chain, the bundle
    job_id = expected[0]
    page.get_by_test_id(f"job-link-{job_id}").click()
    assert f"job={job_id}" in page.url
    page.get_by_test_id("tab-attempts").click()
    detail = _job(api, job_id)
    expect(page.get_by_test_id("job-attempt")).to_have_count(len(detail["executions"]))
    assert "192.0.2" in page.get_by_test_id("attempt-request").first.inner_text()
    page.get_by_test_id("tab-chain").click()
    chain = api.get(f"/engine/jobs/chain/{detail['traceId']}").json()
    expect(page.locator("[data-testid=trace-chain] tbody tr.ant-table-row")).to_have_count(
        len(chain["jobs"])
    )
    with page.expect_download() as download:
        page.get_by_test_id("download-bundle").click()
    bundle = json.loads(Path(download.value.path()).read_text(encoding="utf-8"))
    assert detail["traceId"] in json.dumps(bundle)
    shot(page, "action-job-drawer-en")


def test_job_retry_skip_and_batches(
    server: Server, open_console: Opener, api: httpx.Client, seeded: dict
) -> None:
    page, _ = open_console("zh-CN", path="/monitor/jobs?status=dead&type=trigger_dispatch")
    dead = _dead(api, 5)
    page.locator("[data-testid=jobs-table] tbody tr.ant-table-row").first.wait_for()
    # retry one from its drawer
    first = dead[0]
    page.goto(f"{server.base}/monitor/jobs?status=dead&type=trigger_dispatch&job={first['id']}")
    page.get_by_test_id("job-retry").click()
    _confirm(page)
    wait_for(
        lambda: _job(api, first["id"])["generation"] == first["generation"] + 1, what="the retry"
    )
    # skip another
    second = dead[1]
    page.goto(f"{server.base}/monitor/jobs?status=dead&type=trigger_dispatch&job={second['id']}")
    page.get_by_test_id("job-skip").click()
    _confirm(page)
    wait_for(lambda: _job(api, second["id"])["status"] == "canceled", what="the skip")
    page.keyboard.press("Escape")
    # batch retry of two: the confirmation names them, then one result per item
    page.goto(f"{server.base}/monitor/jobs?status=dead&type=trigger_dispatch")
    pair = [dead[2]["id"], dead[3]["id"]]
    for job_id in pair:  # each checkbox is labelled with the job it selects
        name = f"选择作业 #{job_id}（trigger_dispatch）"  # noqa: RUF001
        page.get_by_role("checkbox", name=name).check()
    page.get_by_test_id("batch-retry").click()
    explain = page.get_by_test_id("batch-explain").inner_text()
    assert all(str(i) in explain for i in pair)
    _press_ok(page, "batch-confirm")
    results = page.locator("[data-testid=batch-results] tbody tr.ant-table-row")
    _expect_rows(page, results, 2)
    # the status column is the one each job had when checked: "dead" beside "submitted"
    expect(page.locator("[data-testid=batch-results] thead")).to_contain_text("操作前状态")
    shot(page, "action-batch-retry-zh-CN")
    page.get_by_test_id("batch-result-close").click()
    for job, job_id in zip(dead[2:4], pair, strict=True):
        wait_for(
            lambda job=job, job_id=job_id: _job(api, job_id)["generation"] == job["generation"] + 1,
            what="batch retry",
        )
    # batch skip of a dead job and a finished one: one skipped by the ledger with its reason
    finished = api.get("/engine/jobs", params={"status": "succeeded", "limit": 1}).json()["items"][
        0
    ]["id"]
    page.goto(f"{server.base}/monitor/jobs?status=dead&status=succeeded")
    page.locator("[data-testid=jobs-table] tbody tr.ant-table-row").first.wait_for()
    target = dead[4]["id"]
    for job_id in (target, finished):
        row = page.locator(f'[data-testid=jobs-table] tr[data-row-key="{job_id}"]')
        if row.count() == 0:
            page.get_by_test_id("page-next").click()
        row.locator("input[type=checkbox]").check()
    page.get_by_test_id("batch-skip").click()
    _press_ok(page, "batch-confirm")
    _expect_rows(page, page.locator("[data-testid=batch-results] tbody tr.ant-table-row"), 2)
    assert _job(api, target)["status"] == "canceled"
    assert _job(api, finished)["status"] == "succeeded"


def test_failure_clusters_and_replay(
    server: Server, open_console: Opener, api: httpx.Client, seeded: dict
) -> None:
    page, _ = open_console("en", path="/monitor/jobs")
    page.get_by_test_id("failure-clusters").wait_for()
    for by in ("type", "instance", "trace", "reason"):
        page.get_by_test_id("cluster-by").get_by_text(
            {"type": "Type", "instance": "Instance", "trace": "Trace", "reason": "Error reason"}[
                by
            ],
            exact=True,
        ).click()
        if by != "reason":
            page.wait_for_url(f"**by={by}**")
        expected = api.get("/engine/jobs/failure-clusters", params={"by": by, "limit": 20}).json()[
            "items"
        ]
        expect(page.get_by_test_id("cluster")).to_have_count(len(expected))
    wait_for(
        lambda: api.get("/engine/jobs/failure-clusters", params={"by": "reason"}).json()["items"],
        what="a cluster",
    )
    page.get_by_test_id("cluster-replay").first.click()
    rate = page.locator("[data-testid=replay-rate] input, input[data-testid=replay-rate]").first
    rate.fill("500")
    rate.blur()
    expect(rate).to_have_value("200")  # the rate is 1 to 200/s
    rate.fill("50")
    page.get_by_test_id("replay-preview").click()
    preview = page.get_by_test_id("replay-preview-result")
    preview.wait_for()
    assert "would be submitted" in preview.inner_text()
    shot(page, "action-replay-preview-en")
    page.get_by_test_id("replay-submit").click()
    progress = page.get_by_test_id("replay-progress")
    progress.wait_for()
    batch = (
        page.locator("[data-testid=replay-progress] .ant-descriptions-item-content")
        .first.inner_text()
        .strip()
    )
    jobs = api.get("/engine/jobs", params={"replayBatchId": batch, "limit": 200}).json()["items"]
    assert jobs, batch
    expect(page.get_by_test_id("replay-state")).to_have_text(
        "Every job of the replay batch has run", timeout=30_000
    )
    shot(page, "action-replay-progress-en")
    states = {
        j["status"]
        for j in api.get("/engine/jobs", params={"replayBatchId": batch, "limit": 200}).json()[
            "items"
        ]
    }
    assert not states & {"pending", "running"}


# ------------------------------------------------------------- compensation


def _ticket_of(api: httpx.Client, instance_id: int) -> dict[str, Any]:
    items = api.get("/compensation/list", params={"instanceId": instance_id}).json()["items"]
    return dict(api.get(f"/compensation/{items[0]['id']}").json())


def _open_ticket(page: Page, server: Server, ticket_id: int) -> None:
    page.goto(f"{server.base}/monitor/compensation?ticket={ticket_id}")
    page.get_by_test_id("ticket-drawer").wait_for()
    page.get_by_test_id("ticket-history").wait_for()


def test_compensation_ticket_operations(
    server: Server, open_console: Opener, api: httpx.Client, seeded: dict
) -> None:
    page, _ = open_console("zh-CN", path="/monitor/compensation?status=pending")
    rows = page.locator("[data-testid=tickets-table] tbody tr.ant-table-row")
    rows.first.wait_for()
    pending = api.get("/compensation/list", params={"status": "pending", "limit": 20}).json()[
        "items"
    ]
    expect(rows).to_have_count(len(pending))
    a, b, c = (_ticket_of(api, i) for i in seeded["notify"])
    undo = _ticket_of(api, seeded["undo"][0])
    # a note, an attachment, its download
    _open_ticket(page, server, a["id"])
    page.get_by_test_id("note-text").fill("called the ERP team")
    page.get_by_test_id("note-add").click()
    wait_for(
        lambda: any(
            h["kind"] == "note" and h["message"] == "called the ERP team"
            for h in _ticket_of(api, seeded["notify"][0])["history"]
        ),
        what="the note",
    )
    page.locator("[data-testid=ticket-drawer] input[type=file]").set_input_files(
        files=[
            {
                "name": "erp-reply.txt",
                "mimeType": "text/plain",
                "buffer": b"order 7 was never created\n",
            }
        ]
    )
    wait_for(
        lambda: any(
            h["kind"] == "attachment" for h in _ticket_of(api, seeded["notify"][0])["history"]
        ),
        what="the attachment",
    )
    with page.expect_download() as download:
        page.get_by_test_id("attachment-download").first.click()
    assert Path(download.value.path()).read_bytes() == b"order 7 was never created\n"
    shot(page, "action-ticket-zh-CN")
    # retry is not allowed here: its reason is shown on the disabled button
    expect(page.get_by_test_id("ticket-retry")).to_be_disabled()
    # resume
    page.get_by_test_id("ticket-resume").click()
    _confirm(page)
    wait_for(
        lambda: _ticket_of(api, seeded["notify"][0])["status"] == "resolved", what="the resume"
    )
    assert any(h["kind"] == "resume" for h in _ticket_of(api, seeded["notify"][0])["history"])
    expect(page.get_by_test_id("ticket-resume")).to_be_disabled()  # closed now
    # resolve
    _open_ticket(page, server, b["id"])
    page.get_by_test_id("ticket-resolve").click()
    _confirm(page)
    wait_for(
        lambda: _ticket_of(api, seeded["notify"][1])["status"] == "resolved", what="the resolve"
    )
    # terminate: the instance is rejected
    _open_ticket(page, server, c["id"])
    page.get_by_test_id("ticket-terminate").click()
    _confirm(page)
    wait_for(
        lambda: _ticket_of(api, seeded["notify"][2])["status"] == "terminated", what="the terminate"
    )
    assert api.get(f"/instances/{seeded['notify'][2]}").json()["status"] == "rejected"
    # retry the failed compensation action
    _open_ticket(page, server, undo["id"])
    assert undo["compensationActionStatus"] == "failed"
    page.get_by_test_id("ticket-action-job").wait_for()
    page.get_by_test_id("ticket-retry").click()
    _confirm(page)
    wait_for(
        lambda: any(h["kind"] == "retry" for h in _ticket_of(api, seeded["undo"][0])["history"]),
        what="the retry",
    )


# ------------------------------------------------ subscriptions and triggers


def test_subscription_lifecycle(server: Server, open_console: Opener, api: httpx.Client) -> None:
    page, _ = open_console("en", path="/subscriptions")
    page.get_by_test_id("subscriptions-table").wait_for()
    page.get_by_test_id("subscription-create").click()
    page.get_by_test_id("subscription-name").fill("console hook")
    page.get_by_test_id("subscription-url").fill("https://hooks.example.com/flowledger")
    page.get_by_test_id("subscription-events").click()
    page.keyboard.type("task.*")
    page.keyboard.press("Enter")
    page.get_by_test_id("subscription-name").click()  # closes the dropdown
    page.get_by_test_id("subscription-save").click()
    secret = page.get_by_test_id("subscription-secret")
    secret.wait_for()
    assert len(secret.inner_text().strip()) >= 20
    page.get_by_test_id("secret-close").click()
    subs = [s for s in api.get("/subscriptions").json()["items"] if s["name"] == "console hook"]
    assert len(subs) == 1 and subs[0]["eventTypes"] == ["task.*"] and subs[0]["hasSecret"]
    sub_id = subs[0]["id"]
    assert "secret" not in api.get(f"/subscriptions/{sub_id}").json()
    page.get_by_test_id(f"subscription-enabled-{sub_id}").click()
    wait_for(lambda: api.get(f"/subscriptions/{sub_id}").json()["enabled"] is False, what="disable")
    page.get_by_test_id(f"subscription-edit-{sub_id}").click()
    name = page.get_by_test_id("subscription-name")
    expect(name).to_have_value("console hook")  # the dialog holds the row being edited
    name.fill("console hook 2")
    page.get_by_test_id("subscription-save").click()
    expect(name).to_be_hidden()  # a saved dialog closes
    wait_for(
        lambda: api.get(f"/subscriptions/{sub_id}").json()["name"] == "console hook 2",
        timeout=10,
        what="edit",
    )
    page.get_by_test_id(f"subscription-hits-{sub_id}").click()
    page.get_by_test_id("hits-table").wait_for()
    shot(page, "action-subscription-hits-en")
    page.keyboard.press("Escape")
    page.get_by_test_id(f"subscription-delete-{sub_id}").click()
    page.get_by_test_id("delete-ok").click()
    wait_for(lambda: api.get(f"/subscriptions/{sub_id}").status_code == 404, what="delete")


def test_trigger_executions(
    server: Server, open_console: Opener, api: httpx.Client, seeded: dict
) -> None:
    params = {
        "type": ["trigger_dispatch", "external_dispatch"],
        "definitionKey": "erp_sync",
        "nodeKey": "push",
        "limit": 20,
    }
    fresh = api.post(
        "/instances", json={"definitionKey": "erp_sync", "form": {"orderId": "T-1"}}
    ).json()["id"]
    dead = wait_for(
        lambda: [
            j
            for j in api.get("/engine/jobs", params={**params, "instanceId": fresh}).json()["items"]
            if j["status"] == "dead"
        ],
        what="the fresh erp_sync push to go dead",
    )
    page, _ = open_console("zh-CN", path="/triggers?definitionKey=erp_sync&nodeKey=push")
    rows = page.locator("[data-testid=triggers-table] tbody tr.ant-table-row")
    rows.first.wait_for()
    expected = api.get("/engine/jobs", params=params).json()["items"]
    assert [int(k) for k in rows.evaluate_all("rs => rs.map(r => r.dataset.rowKey)")] == [
        j["id"] for j in expected
    ]
    assert {j["nodeKey"] for j in expected} == {"push"}
    job = dead[0]
    page.get_by_test_id(f"trigger-job-{job['id']}").click()
    page.get_by_test_id("tab-attempts").click()
    assert "192.0.2.10" in page.get_by_test_id("attempt-request").first.inner_text()
    shot(page, "action-trigger-drawer-zh-CN")
    page.keyboard.press("Escape")
    page.locator(
        f'[data-testid=triggers-table] tr[data-row-key="{job["id"]}"] [data-testid=job-retry]'
    ).click()
    _confirm(page)
    wait_for(
        lambda: _job(api, job["id"])["generation"] == job["generation"] + 1,
        what="the trigger retry",
    )


# ------------------------------------------------- connectors and rules


def test_connectors_and_rules(server: Server, open_console: Opener, api: httpx.Client) -> None:
    page, _ = open_console("en", path="/integrations")
    page.get_by_test_id("connectors-table").wait_for()
    page.get_by_test_id("connector-create").click()
    page.get_by_test_id("connector-key").fill("console_erp")
    page.get_by_test_id("connector-name").fill("Console ERP")
    page.get_by_test_id("connector-url").fill("https://erp.example.com/api")
    page.get_by_test_id("connector-save").click()
    found = wait_for(
        lambda: [c for c in api.get("/connectors").json()["items"] if c["key"] == "console_erp"],
        what="the connector",
    )
    cid = found[0]["id"]
    page.get_by_test_id(f"connector-edit-{cid}").click()
    page.get_by_test_id("connector-name").fill("Console ERP v2")
    page.get_by_test_id("connector-save").click()
    wait_for(
        lambda: api.get(f"/connectors/{cid}").json()["name"] == "Console ERP v2",
        what="connector edit",
    )
    page.get_by_test_id("tab-rules").click()
    page.get_by_test_id("rules-table").wait_for()
    page.get_by_test_id("rule-create").click()
    page.get_by_test_id("rule-name").fill("tell the admin")
    page.get_by_test_id("rule-condition").fill("form.amount > 1")
    page.get_by_test_id("rule-save").click()
    rules = wait_for(
        lambda: [
            r for r in api.get("/automation-rules").json()["items"] if r["name"] == "tell the admin"
        ],
        what="the rule",
    )
    rid = rules[0]["id"]
    assert rules[0]["actions"][0]["type"] == "notify"
    page.get_by_test_id(f"rule-enabled-{rid}").click()
    wait_for(
        lambda: api.get(f"/automation-rules/{rid}").json()["enabled"] is False, what="rule disable"
    )
    page.get_by_test_id(f"rule-edit-{rid}").click()
    page.get_by_test_id("rule-name").fill("tell the admin, edited")
    page.get_by_test_id("rule-save").click()
    wait_for(
        lambda: api.get(f"/automation-rules/{rid}").json()["name"] == "tell the admin, edited",
        what="rule edit",
    )
    shot(page, "action-rules-en")


# ------------------------------------------------- definitions and tasks

BROKEN = """key: console_broken
name: Broken on purpose
nodes:
  - {key: start, type: start}
  - {key: manager, type: approval}
  - {key: end, type: end}
edges:
  - {from: start, to: manager}
  - {from: manager, to: end}
"""

GOOD = BROKEN.replace("console_broken", "console_yaml").replace(
    "{key: manager, type: approval}", "{key: manager, type: approval, assignees: {users: [admin]}}"
)


def test_definitions_diagram_deploy_and_start(
    server: Server, open_console: Opener, api: httpx.Client, seeded: dict
) -> None:
    page, watch = open_console("en", path="/definitions?key=purchase")
    page.get_by_test_id("diagram-node-manager").wait_for()
    source = api.get("/definitions/purchase/versions/1").json()["source"]
    expect(page.locator("[data-testid^=diagram-node-]")).to_have_count(len(source["nodes"]))
    watch.allow(422, "/api/workflows/definitions")
    page.get_by_test_id("deploy-source").fill(BROKEN)
    page.get_by_test_id("deploy-submit").click()
    problems = page.get_by_test_id("deploy-problems")
    problems.wait_for()
    assert "manager" in problems.inner_text()
    expect(page.get_by_test_id("diagram-node-manager").last).to_have_attribute(
        "data-problem", "true"
    )
    shot(page, "action-deploy-problems-en")
    assert api.get("/definitions/console_broken/versions").status_code == 404  # nothing deployed
    page.get_by_test_id("deploy-source").fill(GOOD)
    page.get_by_test_id("deploy-submit").click()
    page.wait_for_url("**key=console_yaml**")
    assert [
        d["version"] for d in api.get("/definitions/console_yaml/versions").json()["items"]
    ] == [1]
    # start an instance from the generated form
    page.goto(f"{server.base}/definitions?key=console_approval")
    page.get_by_test_id("start-instance").click()
    # submitted with the required amount empty: the form says so, and nothing
    # escapes as an uncaught error (the watch fails the test on a page error)
    page.get_by_test_id("start-submit").click()
    expect(page.locator(".ant-form-item-explain-error").first).to_be_visible()
    page.locator("[data-testid=field-amount] input, input[data-testid=field-amount]").first.fill(
        "4321"
    )
    page.get_by_test_id("field-note").fill("from the console")
    page.get_by_test_id("start-submit").click()
    found = wait_for(
        lambda: [
            i
            for i in api.get(
                "/instances", params={"definitionKey": "console_approval", "limit": 50}
            ).json()["items"]
            if i["form"].get("amount") == 4321
        ],
        what="the started instance",
    )
    assert found[0]["form"] == {"amount": 4321, "note": "from the console"}


def _tasks(api: httpx.Client, **params: Any) -> list[dict[str, Any]]:
    return list(api.get("/tasks", params={"limit": 100, **params}).json()["items"])


def test_my_tasks_actions(
    server: Server, open_console: Opener, api: httpx.Client, seeded: dict
) -> None:
    approvals = [
        t
        for t in _tasks(api, status="pending")
        if t["definitionKey"] == "console_approval" and t["instanceId"] in seeded["approval"]
    ]
    repairs = [
        t
        for t in _tasks(api, status="pending")
        if t["definitionKey"] == "erp_sync" and t["kind"] == "catch"
    ]
    assert len(approvals) == 4 and repairs
    page, _ = open_console("zh-CN", path="/tasks")
    page.get_by_test_id("tasks-table").wait_for()

    def act(
        task_id: int, action: str, comment: str = "", to: str = "", navigate: bool = True
    ) -> None:
        if navigate:
            page.goto(f"{server.base}/tasks?task={task_id}")
        page.get_by_test_id("task-drawer").wait_for()
        page.get_by_test_id(f"task-{action}").click()
        if to:
            page.get_by_test_id("act-to").fill(to)
        if comment:
            page.get_by_test_id("act-comment").fill(comment)
        page.get_by_test_id("act-ok").click()
        expect(page.get_by_test_id("act-ok")).to_be_hidden()

    approve, reject, transfer, comment = approvals
    page.goto(f"{server.base}/tasks?task={approve['id']}")
    amount = page.locator("[data-testid=field-amount] input, input[data-testid=field-amount]").first
    form = api.get(f"/instances/{approve['instanceId']}").json()["form"]
    expect(amount).to_have_value(str(form["amount"]))  # the instance's form, loaded
    amount.fill("150")
    shot(page, "action-task-zh-CN")
    act(approve["id"], "approve", comment="ok", navigate=False)
    wait_for(
        lambda: api.get(f"/tasks/{approve['id']}").json()["action"] == "approve", what="approve"
    )
    assert api.get(f"/instances/{approve['instanceId']}").json()["form"]["amount"] == 150
    act(reject["id"], "reject", comment="no budget")
    wait_for(
        lambda: api.get(f"/instances/{reject['instanceId']}").json()["status"] == "rejected",
        what="reject",
    )
    act(transfer["id"], "transfer", to="alice")
    wait_for(
        lambda: any(
            t["assignee"] == "alice"
            for t in api.get(f"/instances/{transfer['instanceId']}").json()["tasks"]
            if t["status"] == "pending"
        ),
        what="transfer",
    )
    act(comment["id"], "comment", comment="looking at it")
    wait_for(
        lambda: any(
            c["body"] == "looking at it"
            for c in api.get(f"/instances/{comment['instanceId']}").json()["comments"]
        ),
        what="comment",
    )
    act(repairs[0]["id"], "handle", comment="fixed by hand")
    wait_for(
        lambda: api.get(f"/tasks/{repairs[0]['id']}").json()["status"] == "completed", what="handle"
    )
