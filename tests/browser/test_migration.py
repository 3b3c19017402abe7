"""Migrating running instances from the console (issue 30), in both
languages: the definitions page lists the instances still running per
version; "migrate to …" opens the dialog, whose first dry run shows the
instance blocked (its node has no same-key node on the target), the mapping
editor maps it, the second dry run shows it changed, and the run migrates it
— checked through the API (the instance on the target version, its task on
the renamed node). From the instances list, the selected instances of one
definition version migrate to its latest version and the others stay."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from playwright.sync_api import expect

from tests.browser.conftest import LANGS, Opener, Server, shot

TEXT = {
    "zh-CN": {"ok": "无变化", "blocked": "被阻止", "changed": "有变化", "migrated": "已迁移"},
    "en": {"ok": "OK", "blocked": "Blocked", "changed": "Changed", "migrated": "Migrated"},
}


def _definition(key: str, review: str, extra: bool) -> dict[str, Any]:
    nodes: list[dict[str, Any]] = [
        {"key": "start", "type": "start"},
        {"key": review, "type": "approval", "assignees": {"users": ["admin"]}},
        {"key": "end", "type": "end"},
    ]
    edges = [{"from": "start", "to": review}]
    if extra:
        nodes.append({"key": "sign", "type": "approval", "assignees": {"users": ["admin"]}})
        edges += [{"from": review, "to": "sign"}, {"from": "sign", "to": "end"}]
    else:
        edges.append({"from": review, "to": "end"})
    return {"key": key, "name": key, "nodes": nodes, "edges": edges}


@pytest.fixture(scope="module")
def api(server: Server) -> Iterator[httpx.Client]:
    with server.api() as client:
        yield client


@pytest.mark.parametrize("lang", LANGS)
def test_migrate_from_the_definitions_page(
    server: Server, open_console: Opener, api: httpx.Client, lang: str
) -> None:
    key = f"mig_{lang.replace('-', '_')}"
    assert api.post("/definitions", json={"definition": _definition(key, "a", False)}).is_success
    started = api.post("/instances", json={"definitionKey": key, "form": {}})
    assert started.status_code == 201, started.text
    iid = started.json()["id"]
    assert api.post("/definitions", json={"definition": _definition(key, "a2", True)}).is_success

    page, _ = open_console(lang, path=f"/definitions?key={key}")
    running = page.get_by_test_id("running-versions")
    expect(running).to_contain_text("1")
    page.get_by_test_id("migrate-from-1").click()
    page.get_by_test_id("migrate-dry-run").click()
    results = page.get_by_test_id("migrate-results")
    expect(results).to_contain_text(TEXT[lang]["blocked"])
    expect(results).to_contain_text(str(iid))

    target = "Target node for a" if lang == "en" else "a 的目标节点"
    page.get_by_role("combobox", name=target).click()
    page.locator(".ant-select-item-option", has_text="a2 (approval)").click()
    page.get_by_test_id("migrate-reason").fill("review renamed, signature added")
    page.get_by_test_id("migrate-dry-run").click()
    expect(results).to_contain_text(TEXT[lang]["changed"])
    expect(results).to_contain_text("a → a2")
    page.get_by_test_id("migrate-run").click()
    expect(results).to_contain_text(TEXT[lang]["migrated"])
    shot(page, f"migration-{lang}")

    found = api.get(f"/instances/{iid}").json()
    assert found["definitionVersion"] == 2
    drain = api.get(f"/definitions/{key}/versions/running").json()
    assert [(v["version"], v["running"]) for v in drain["versions"]] == [(2, 1)]


@pytest.mark.parametrize("lang", LANGS)
def test_migrate_selected_instances_from_the_instances_list(
    server: Server, open_console: Opener, api: httpx.Client, lang: str
) -> None:
    key = f"migsel_{lang.replace('-', '_')}"
    assert api.post("/definitions", json={"definition": _definition(key, "a", False)}).is_success
    ids = [
        api.post("/instances", json={"definitionKey": key, "form": {}}).json()["id"]
        for _ in range(3)
    ]
    assert api.post("/definitions", json={"definition": _definition(key, "a", True)}).is_success

    page, _ = open_console(lang, path=f"/monitor/instances?definitionKey={key}")
    for iid in ids[:2]:  # each checkbox is labelled with the instance it selects
        label = {
            "en": f"Select instance #{iid} ({key} v1)",
            "zh-CN": f"选择实例 #{iid}（{key} v1）",  # noqa: RUF001
        }
        page.get_by_role("checkbox", name=label[lang]).check()
    page.get_by_test_id("open-migrate").click()
    page.get_by_test_id("migrate-dry-run").click()
    results = page.get_by_test_id("migrate-results")
    expect(results.locator("tbody tr")).to_have_count(2)
    expect(results).to_contain_text(TEXT[lang]["ok"])
    page.get_by_test_id("migrate-reason").fill("a signature step was added")
    page.get_by_test_id("migrate-run").click()
    expect(results).to_contain_text(TEXT[lang]["migrated"])
    versions = {i: api.get(f"/instances/{i}").json()["definitionVersion"] for i in ids}
    assert versions == {ids[0]: 2, ids[1]: 2, ids[2]: 1}
