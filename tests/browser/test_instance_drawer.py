"""The runtime diagnostics drawer (issue 14 items 2-4, 9; SPEC O-4, O-5,
O-7, O-10, O-12): the verdict and the conclusions of every demo instance
worded in the drawer's language (zh-CN from messageParams, en the API's
English word for word); every broken instance the health inspection lists is
opened from its link, its verdict read and its one-click repair done with a
reason, checked through the API and in ``operation_audit``; then the drawer
in both languages (every tab), a force jump picked on the diagram, reassign
with the 409 in words, form correction with the retry of the failed job and
the bundle download."""

from __future__ import annotations

import json
import re
import sqlite3
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import LANGS, Opener, Server, run_server, shot

TABS = ("diagram", "trace", "nodes", "tasks", "triggers", "events", "tokens", "form", "definition")
# what the drawer says for a demo case it has no repair for: nothing is broken
NO_REPAIR = "nothing is"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A demo of this file's own: it repairs every broken instance the demo
    ships, so it must not share a server whose demo an earlier file of the
    session has already repaired in part."""
    with run_server(tmp_path_factory) as running:
        yield running


@pytest.fixture(scope="module")
def api(server: Server) -> Iterator[httpx.Client]:
    with server.api() as client:
        yield client


def _db(server: Server, sql: str, *args: Any) -> list[tuple[Any, ...]]:
    with sqlite3.connect(server.db_url.removeprefix("sqlite:///")) as conn:
        return list(conn.execute(sql, args))


def _audit(server: Server, action: str, target_id: object) -> tuple[Any, ...]:
    rows = _db(
        server,
        "SELECT reason, result, detail FROM operation_audit"
        " WHERE action = ? AND target_id = ? ORDER BY id DESC",
        action,
        str(target_id),
    )
    assert rows, f"no {action} audit row for {target_id}"
    return rows[0]


def _until(check: Callable[[], bool], what: str, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.3)


def _drawer(page: Page, server: Server, iid: int, via_health: bool = False) -> Any:
    if via_health:
        # as an operator finds it: the health inspection's row links to the drawer
        page.goto(f"{server.base}/monitor/health")
        page.get_by_test_id(f"instance-link-{iid}").first.click()
        expect(page).to_have_url(re.compile(rf"[?&]instance={iid}(&|$)"))
    else:
        page.goto(f"{server.base}/monitor/jobs?instance={iid}")
    drawer = page.get_by_test_id("instance-drawer")
    expect(drawer).to_have_attribute("data-loaded", "true")
    return drawer


def _reason(page: Page, text: str) -> None:
    confirm = page.get_by_test_id("repair-confirm")
    expect(confirm).to_be_disabled()
    page.get_by_test_id("repair-reason").fill("   ")
    expect(confirm).to_be_disabled()
    page.get_by_test_id("repair-reason").fill(text)
    expect(confirm).to_be_enabled()
    confirm.click()
    expect(confirm).to_have_count(0)


def _diagnostics(api: httpx.Client, iid: int) -> dict[str, Any]:
    response = api.get(f"/instances/{iid}/diagnostics", params={"limit": 1})
    response.raise_for_status()
    return dict(response.json())


def _jump_on_diagram(page: Page, target: str, reason: str) -> None:
    dialog = page.get_by_test_id("force-jump-dialog")
    dialog.get_by_test_id(f"diagram-node-{target}").click()
    expect(dialog.get_by_test_id("jump-target")).to_contain_text(target)
    expect(dialog.get_by_test_id("jump-diff")).to_be_visible()
    _reason(page, reason)


# the waits the inspection reports whose recovery may find nothing to do yet
WAITS = ("subprocess_waiting", "external_dispatch_pending")


def _nothing_to_recover(page: Page) -> bool:
    count = page.get_by_test_id("recovery-count")
    expect(count).to_be_visible()
    return count.inner_text().startswith("0 ")


def _repair(page: Page, server: Server, api: httpx.Client, iid: int, action: str) -> None:
    """Do the verdict's repair of ``iid`` and check it through the API."""
    doc = _diagnostics(api, iid)
    params = doc["verdict"]["params"]
    reason = f"drawer repair of #{iid}"
    if action == "job_retry":
        before = api.get(f"/engine/jobs/{params['jobId']}").json()
    if action == "job_retry" and doc["instance"]["definitionKey"] == "invoice_push":
        # the form-data view: correct the field, then retry the failed job from there
        page.get_by_test_id("drawer-tab-form").click()
        page.get_by_test_id("form-field").click()
        page.locator(".ant-select-item-option").filter(has_text="invoiceId").click()
        page.get_by_test_id("form-value").fill("INV-7-fixed")
        page.get_by_test_id("form-reason").fill(reason)
        shot(page, f"drawer-form-{iid}-en")
        page.get_by_test_id("form-submit").click()
        expect(page.get_by_test_id("form-history")).to_contain_text("INV-7-fixed")
        assert _diagnostics(api, iid)["form"]["data"]["invoiceId"] == "INV-7-fixed"
        assert _audit(server, "instance.correct_form", iid)[:2] == (reason, "ok")
        page.get_by_test_id("form-retry-job").click()
    else:
        page.get_by_test_id("verdict-repair").click()
    if action == "force_jump":
        target = params["target"]
        if target is None:
            # a gateway that matched no branch: the verdict names its branches
            # (jumping back onto it would stall again) and the operator picks one
            assert params["candidates"], params
            target = params["candidates"][0]
        _jump_on_diagram(page, target, reason)
        expect(
            page.get_by_test_id("drawer-position").locator(f"[data-node={target}]")
        ).to_be_visible()
        after = _diagnostics(api, iid)
        states = {n["key"]: n["state"] for n in after["nodes"]}
        assert states[target] in ("active", "waiting"), states
        # a node that failed and that the jump left is history, not where it is now
        live = {t["nodeKey"] for t in after["tokens"]["items"] if t["state"] != "consumed"}
        for key, state in states.items():
            if state == "failed" and key not in live:
                position = page.get_by_test_id("drawer-position")
                expect(position.locator(f"[data-node={key}]")).to_have_count(0)
        assert {c["rule"] for c in after["conclusions"]}.isdisjoint(
            {"task_without_token", "running_without_active_task"}
        ), after["conclusions"]
        assert _audit(server, "instance.force_jump", iid)[:2] == (reason, "ok")
    elif action == "job_retry":
        _reason(page, reason)
        job_id = params["jobId"]
        assert _audit(server, "job.retry", job_id)[:2] == (reason, "ok")

        def retried() -> bool:
            job = api.get(f"/engine/jobs/{job_id}").json()
            return bool(
                job["status"] != before["status"]
                or len(job["executions"]) > len(before["executions"])
            )

        _until(retried, f"job {job_id} was not retried")
    elif action == "recovery" and not _nothing_to_recover(page):
        _reason(page, reason)
        result, outcome, detail = _audit(server, "recovery.run", params["action"])
        assert (result, outcome) == (reason, "ok")
        done = json.loads(detail)
        assert done["filter"]["instanceId"] == iid and done["done"] >= 1, detail
    elif action == "recovery":
        # a wait the inspection reports (a subprocess or an external approval
        # still in its backoff): its recovery finds nothing to repair yet
        assert doc["verdict"]["code"] in WAITS, doc["verdict"]
        page.get_by_role("button", name="Cancel").click()
    elif action == "replay":
        # the instance's failed webhook deliveries: the preview, then the replay
        expect(page.get_by_test_id("replay-count")).to_contain_text("1 failed delivery job")
        shot(page, f"drawer-replay-{iid}-en")
        _reason(page, reason)
        rows = _db(
            server,
            "SELECT reason, result, detail FROM operation_audit"
            " WHERE action = 'job.replay' ORDER BY id DESC",
        )
        assert rows and rows[0][:2] == (reason, "ok"), rows
        done = json.loads(rows[0][2])
        assert done["filter"]["instanceId"] == iid and done["submitted"] == 1, done
    elif action == "remind":
        _reason(page, reason)
        assert _audit(server, "task.remind", params["taskId"])[:2] == (reason, "ok")
        messages = _db(
            server,
            "SELECT count(*) FROM workflow_messages WHERE kind = 'task_reminder' AND body LIKE ?",
            f"%{reason}%",
        )
        assert messages == [(1,)]
    else:
        raise AssertionError(f"#{iid}: unknown repair {action}")


def _instance_ids(api: httpx.Client) -> list[int]:
    ids: list[int] = []
    cursor: str | None = None
    while True:
        page = api.get(
            "/instances", params={"limit": 200, **({"cursor": cursor} if cursor else {})}
        )
        page.raise_for_status()
        ids += [int(i["id"]) for i in page.json()["items"]]
        cursor = page.json().get("next")
        if not cursor:
            return sorted(ids)


def _findings(api: httpx.Client, iid: int) -> tuple[str, list[str]]:
    doc = _diagnostics(api, iid)
    return doc["verdict"]["message"], [c["message"] for c in doc["conclusions"]]


def _open_in_place(page: Page, iid: int) -> None:
    """Open the drawer of ``iid`` on the page already loaded, as an
    ``InstanceLink`` does (the router follows the URL; no reload)."""
    page.evaluate(
        "id => { history.pushState({}, '', `/monitor/jobs?instance=${id}`);"
        " dispatchEvent(new PopStateEvent('popstate')); }",
        iid,
    )
    loaded = f"[data-testid=instance-drawer][data-instance='{iid}'][data-loaded=true]"
    expect(page.locator(loaded)).to_be_visible()


def _shown(page: Page) -> tuple[str, list[str]]:
    verdict = page.get_by_test_id("drawer-verdict-message").inner_text()
    return verdict, page.get_by_test_id("conclusion-message").all_inner_texts()


CJK = re.compile(r"[\u4e00-\u9fff]")


def test_the_verdict_and_conclusions_are_worded_in_the_drawers_language(
    server: Server, open_console: Opener, api: httpx.Client
) -> None:
    """Before any repair (the next test repairs the demo): en shows the API's
    English of every demo instance word for word; zh-CN words every one in
    Chinese, and a few known ones exactly — the lost task token's verdict
    with its force jump, the lost wake job's deadlock conclusion, a
    suspended instance. (An age may tick between two reads: the drawer's
    text is the API's read before it or after it.)"""
    docs = {iid: _diagnostics(api, iid) for iid in _instance_ids(api)}
    by_code = {d["verdict"]["code"]: d for d in reversed(docs.values())}
    lost_token = by_code["task_without_token"]
    p = lost_token["verdict"]["messageParams"]
    lost_wake = next(
        d
        for d in docs.values()
        if d["verdict"]["code"] == "delay_missing_wake_job"
        and any(c["rule"] == "waiting_task_unwakeable" for c in d["conclusions"])
    )
    (deadlock,) = [c for c in lost_wake["conclusions"] if c["rule"] == "waiting_task_unwakeable"]
    suspended = by_code["suspended"]
    hooked = by_code["webhook_delivery_failed"]
    for lang in LANGS:
        page, _ = open_console(lang)
        _drawer(page, server, next(iter(docs)))
        for iid in docs:
            before = _findings(api, iid)
            _open_in_place(page, iid)
            verdict, conclusions = _shown(page)
            after = _findings(api, iid)
            if lang == "en":
                assert (verdict, conclusions) in (before, after), iid
                continue
            assert verdict not in (before[0], after[0]) and CJK.search(verdict), (iid, verdict)
            for text, english in zip(conclusions, before[1], strict=True):
                assert text != english and CJK.search(text), (iid, text)
        # the known ones, exactly
        _open_in_place(page, lost_token["instance"]["id"])
        message = page.get_by_test_id("drawer-verdict-message")
        if lang == "zh-CN":
            expect(message).to_have_text(
                f"节点「{p['nodeKey']}」的任务 {p['taskId']} 没有活动的执行 Token，"  # noqa: RUF001
                f"处理该任务必然失败；请强制跳转到节点「{lost_token['verdict']['params']['target']}」。"  # noqa: RUF001
            )
        else:
            expect(message).to_have_text(lost_token["verdict"]["message"])
            assert lost_token["verdict"]["message"] == (
                f"Task {p['taskId']} at «{p['nodeKey']}» holds no active token, so acting on it "
                f"will fail; force jump to «{p['nodeKey']}»."
            )
        shot(page, f"drawer-verdict-worded-{lang}")
        _open_in_place(page, lost_wake["instance"]["id"])
        rows = page.get_by_test_id("conclusion").filter(has_text="waiting_task_unwakeable")
        nodes = deadlock["messageParams"]["nodeKeys"]
        expect(rows.get_by_test_id("conclusion-message")).to_have_text(
            "仅剩等待中的任务（节点"  # noqa: RUF001
            + "、".join(f"「{n}」" for n in nodes)
            + "），且没有任何作业、外部回调、子实例或待处理任务能唤醒它们（疑似死锁）"  # noqa: RUF001
            if lang == "zh-CN"
            else deadlock["message"]
        )
        expect(page.get_by_test_id("drawer-verdict-message")).to_contain_text(
            "请执行恢复动作「延时唤醒」。"
            if lang == "zh-CN"
            else "run the recovery action delay-wake."
        )
        shot(page, f"drawer-conclusion-worded-{lang}")
        # one diagnosis: a dead webhook delivery is the drawer's verdict, with the
        # inspection's rule under each conclusion and the replay as its repair
        _open_in_place(page, hooked["instance"]["id"])
        row = page.get_by_test_id("conclusion").filter(has_text="webhook_delivery_failed")
        expect(row.get_by_test_id("conclusion-message")).to_contain_text(
            "Webhook 投递最终失败" if lang == "zh-CN" else "failed for good"
        )
        expect(row.get_by_test_id("conclusion-health-rule")).to_have_text(
            "健康巡检：Webhook 投递失败"  # noqa: RUF001
            if lang == "zh-CN"
            else "health inspection: Webhook delivery failed"
        )
        expect(page.get_by_test_id("verdict-repair")).to_have_text(
            "重放投递…" if lang == "zh-CN" else "Replay deliveries…"
        )
        shot(page, f"drawer-webhook-{lang}")
        _open_in_place(page, suspended["instance"]["id"])
        expect(page.get_by_test_id("drawer-verdict-message")).to_have_text(
            "一切正常：实例已挂起，恢复后继续执行"  # noqa: RUF001
            if lang == "zh-CN"
            else suspended["verdict"]["message"]
        )


def test_every_broken_demo_instance_is_repaired_from_its_drawer(
    server: Server, open_console: Opener, api: httpx.Client
) -> None:
    problems = api.get("/engine/health-inspection").json()["items"]
    rules: dict[int, set[str]] = {}
    for p in problems:
        rules.setdefault(p["instanceId"], set()).add(p["rule"])
    assert len(rules) >= 10, problems
    page, _ = open_console("en")
    repaired: dict[int, str] = {}
    no_repair: dict[int, set[str]] = {}
    for iid in sorted(rules):
        _drawer(page, server, iid, via_health=True)
        verdict = page.get_by_test_id("drawer-verdict")
        action = verdict.get_attribute("data-action") or ""
        shot(page, f"drawer-verdict-{iid}-en")
        if not action:
            expect(verdict).to_contain_text(NO_REPAIR)
            no_repair[iid] = rules[iid]
            continue
        _repair(page, server, api, iid, action)
        repaired[iid] = action
    # the console repairs every kind of problem the demo ships; the rest only wait
    assert {"force_jump", "job_retry", "recovery", "remind", "replay"} <= set(repaired.values()), (
        repaired
    )
    waiting = {"subprocess_waiting", "external_dispatch_pending", "waiting_task_stuck"}
    assert all(r <= waiting for r in no_repair.values()), no_repair


def _rich_instance(server: Server) -> int:
    """A running expense with an open inclusive join (branches partly done)."""
    rows = _db(
        server,
        "SELECT i.id FROM workflow_instances i JOIN workflow_tasks t ON t.instance_id = i.id"
        " WHERE i.definition_key = 'expense' AND i.status = 'running' AND t.status = 'pending'"
        " GROUP BY i.id ORDER BY count(*) DESC, i.id",
    )
    return int(rows[0][0])


def test_drawer_tabs_jump_reassign_and_bundle(
    server: Server, open_console: Opener, api: httpx.Client, tmp_path: Path
) -> None:
    iid = _rich_instance(server)
    for lang in LANGS:
        page, watch = open_console(lang, path=f"/monitor/jobs?instance={iid}")
        expect(page.get_by_test_id("instance-drawer")).to_have_attribute("data-loaded", "true")
        for tab in TABS:
            page.get_by_test_id(f"drawer-tab-{tab}").click()
            expect(page.get_by_test_id(f"view-{tab}")).to_be_visible()
            shot(page, f"drawer-{tab}-{lang}")
        page.get_by_test_id("drawer-tab-tokens").click()
        expect(page.locator("[data-testid^=open-join-]").first).to_be_visible()
        if lang == "zh-CN":
            page.get_by_test_id("drawer-tab-diagram").click()
            page.get_by_test_id("diagram-node-manager").click()
            expect(page.get_by_test_id("diagram-node-detail")).to_be_visible()
            shot(page, "drawer-diagram-node-zh-CN")
            continue
        # the bundle download
        with page.expect_download() as info:
            page.get_by_test_id("drawer-bundle").click()
        path = tmp_path / info.value.suggested_filename
        info.value.save_as(path)
        bundle = json.loads(path.read_text())
        assert bundle["instanceId"] == iid and bundle["diagnostics"]["instance"]["id"] == iid
        # reassign: to the holder (409 in words), then to someone else
        page.get_by_test_id("drawer-tab-tasks").click()
        task = next(t for t in _diagnostics(api, iid)["tasks"] if t["status"] == "pending")
        watch.allow(409, f"/tasks/{task['id']}/reassign")
        page.get_by_test_id(f"task-reassign-{task['id']}").click()
        page.get_by_test_id("reassign-to").fill(task["assignee"])
        page.get_by_test_id("repair-reason").fill("cover the holiday")
        page.get_by_test_id("repair-confirm").click()
        expect(page.get_by_test_id("reassign-conflict")).to_contain_text("already holds")
        shot(page, "drawer-reassign-409-en")
        page.get_by_test_id("reassign-to").fill("dave")
        page.get_by_test_id("repair-confirm").click()
        expect(page.get_by_test_id("reassign-dialog")).to_have_count(0)
        moved = next(t for t in _diagnostics(api, iid)["tasks"] if t["id"] == task["id"])
        assert moved["assignee"] == "dave"
        assert _audit(server, "task.reassign", task["id"])[:2] == ("cover the holiday", "ok")
        # force jump picked on the diagram: back to the manager's approval
        page.get_by_test_id("drawer-force-jump").click()
        _jump_on_diagram(page, "manager", "redo the manager approval")
        expect(
            page.get_by_test_id("drawer-position").locator("[data-node=manager]")
        ).to_be_visible()
        shot(page, "drawer-after-jump-en")
        tasks = _diagnostics(api, iid)["tasks"]
        assert [t["assignee"] for t in tasks if t["open"]] == ["alice"], tasks
        assert _audit(server, "instance.force_jump", iid)[:2] == ("redo the manager approval", "ok")
