"""Units people read (issue 31 item 5): every duration and rate the console
shows is in a human unit ("1 h 30 min", not "5400336 ms") and every count is
grouped (12,000), in both languages; the API keeps the raw numbers.

The demo is given figures the old console showed raw: one attempt of an
instance's job lasted 5,400,336 ms after 95 s in the queue (the job drawer,
the instance drawer's trace and the runtime panel's 1-hour average show
it), and 12,000 succeeded jobs of one type (the analytics async-health
table counts them). Each page that shows durations, rates or counts is then
read in zh-CN and en: no text node holds a raw figure — a millisecond value
of 1,000 or more, seconds of 60 or more, minutes of 60 or more, or an
ungrouped number of five digits or more (ids, times and JSON aside) — and
the human unit words of the page's language are there."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

import httpx
import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import LANGS, Opener, Server, run_server, shot

DURATION_MS = 5_400_336  # 1 h 30 min
QUEUE_DELAY = timedelta(seconds=95)  # 1 min 35 s
BULK = 12_000
BULK_TYPE = "units.bulk"

# what the seeded figures read as, per language
WORDS = {
    "en": {"duration": "1 h 30 min", "queued": "queued 1 min 35 s", "bulk": "12,000"},
    "zh-CN": {"duration": "1 小时 30 分钟", "queued": "排队 1 分钟 35 秒", "bulk": "12,000"},
}
# any number in a unit of the language, e.g. "2.5 s", "3 天"
HUMAN = {
    "en": re.compile(r"\d(?:[\d,]*\d)?(?:\.\d+)? (?:ms|s|min|h|d)(?![a-zA-Z])"),
    "zh-CN": re.compile(r"\d(?:[\d,]*\d)?(?:\.\d+)? (?:毫秒|秒|分钟|小时|天)"),
}
NUMBER = r"(\d(?:[\d,]*\d)?(?:\.\d+)?)"
# (pattern, largest value a human reading keeps in that unit)
LIMITS = [
    (re.compile(NUMBER + r" ?(?:ms|毫秒)"), 1_000),
    (re.compile(NUMBER + r" ?(?:s|秒)(?![a-zA-Z])"), 60),
    (re.compile(NUMBER + r" ?(?:min|分钟)"), 60),
]
# ids (#123), timestamps and versions are not counts
NOT_COUNTS = re.compile(r"#\d+|\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}(?::\d{2})?|\bv\d+")
UNGROUPED = re.compile(r"(?<![\w.,:/#-])\d{5,}(?![\w.,-])")

# every text node of the page, one per line, JSON blocks and code aside
TEXTS_JS = """() => {
  const out = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    if (node.parentElement && node.parentElement.closest('pre, code, script, style')) continue;
    const text = node.textContent.trim();
    if (text) out.push(text);
  }
  return out;
}"""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A demo of this file's own: it rewrites one attempt's timings and adds
    thousands of jobs, which no other file should see."""
    with run_server(tmp_path_factory) as running:
        yield running


def _db(server: Server) -> sqlite3.Connection:
    return sqlite3.connect(server.db_url.removeprefix("sqlite:///"), timeout=30)


def _timed_attempt(api: httpx.Client) -> tuple[int, int, int]:
    """(instance, job, execution) of a demo instance whose trace shows a
    finished attempt of one of its jobs."""
    instances = api.get("/instances", params={"limit": 100}).json()["items"]
    for instance in instances:
        doc = api.get(f"/instances/{instance['id']}/diagnostics").json()
        for job in doc["trace"]["jobChain"]["jobs"]:
            for execution in job["executions"]:
                if execution.get("durationMs") is not None:
                    return instance["id"], job["id"], execution["id"]
    raise AssertionError("no demo instance has a finished job attempt")


@pytest.fixture(scope="module")
def seeded(server: Server) -> dict[str, int]:
    with server.api() as api:
        instance_id, job_id, execution_id = _timed_attempt(api)
    with _db(server) as conn:
        (started,) = conn.execute(
            "SELECT started_at FROM workflow_job_executions WHERE id = ?", (execution_id,)
        ).fetchone()
        scheduled = datetime.fromisoformat(started) - QUEUE_DELAY
        conn.execute(
            "UPDATE workflow_job_executions SET duration_ms = ?, scheduled_at = ? WHERE id = ?",
            (DURATION_MS, scheduled.isoformat(sep=" "), execution_id),
        )
        columns = [row[1] for row in conn.execute("PRAGMA table_info(workflow_jobs)")]
        copied = [c for c in columns if c != "id"]
        fixed = {
            "type": f"'{BULK_TYPE}'",
            "instance_id": "NULL",
            "task_id": "NULL",
            "idempotency_key": "NULL",
            "replay_batch_id": "NULL",
            "trace_id": "'units-bulk'",
        }
        conn.execute(
            f"WITH RECURSIVE seq(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM seq WHERE n < {BULK})"
            f" INSERT INTO workflow_jobs ({', '.join(copied)})"
            f" SELECT {', '.join(fixed.get(c, f'src.{c}') for c in copied)} FROM seq,"
            " (SELECT * FROM workflow_jobs WHERE status = 'succeeded' ORDER BY id LIMIT 1) AS src"
        )
    with server.api() as api:
        # the API keeps raw numbers: milliseconds as they are stored
        job = api.get(f"/engine/jobs/{job_id}").json()
        execution = next(e for e in job["executions"] if e["id"] == execution_id)
        assert execution["durationMs"] == DURATION_MS
        assert execution["queueDelayMs"] == pytest.approx(QUEUE_DELAY.total_seconds() * 1000)
    return {"instance": instance_id, "job": job_id}


def _raw_figures(texts: list[str]) -> list[str]:
    found = []
    for text in texts:
        for pattern, limit in LIMITS:
            for match in pattern.finditer(text):
                if float(match.group(1).replace(",", "")) >= limit:
                    found.append(f"{match.group(0)!r} in {text!r}")
        for match in UNGROUPED.finditer(NOT_COUNTS.sub(" ", text)):
            found.append(f"ungrouped {match.group(0)!r} in {text!r}")
    return found


def _read(page: Page, lang: str, name: str, focus: Any = None) -> str:
    """The page's text once checked: no raw figure, some human unit; a
    screenshot (with ``focus`` scrolled into view: a drawer does not grow
    with the page)."""
    if focus is not None:
        focus.scroll_into_view_if_needed()
    texts: list[str] = page.evaluate(TEXTS_JS)
    shot(page, f"units-{name}-{lang}")
    raw = _raw_figures(texts)
    assert not raw, f"{name} ({lang}) shows raw figures:\n" + "\n".join(raw)
    text = "\n".join(texts)
    assert HUMAN[lang].search(text), f"{name} ({lang}) shows no duration in {lang} units"
    return text


def _open_job_attempts(page: Page, server: Server, job_id: int) -> Any:
    page.goto(f"{server.base}/monitor/jobs?job={job_id}")
    drawer = page.get_by_test_id("job-drawer")
    drawer.get_by_test_id("tab-attempts").click()
    return drawer


@pytest.mark.parametrize("lang", LANGS)
def test_durations_rates_and_counts_read_as_human_units(
    open_console: Opener, server: Server, seeded: dict[str, int], lang: str
) -> None:
    words = WORDS[lang]
    page, _ = open_console(lang, path="/monitor/jobs")

    # the runtime panel: queue percentiles, the oldest queued, the 1-hour average
    panel = page.get_by_test_id("runtime-panel")
    expect(panel.get_by_test_id("runtime-avgDuration")).to_contain_text(HUMAN[lang])
    _read(page, lang, "runtime")

    # the job drawer: the attempt's duration and queue delay
    drawer = _open_job_attempts(page, server, seeded["job"])
    expect(drawer.get_by_test_id("job-generations")).to_contain_text(words["duration"])
    expect(drawer.get_by_test_id("job-generations")).to_contain_text(words["queued"])
    _read(page, lang, "job-drawer", drawer.get_by_test_id("job-attempt").first)

    # the instance drawer: the trace's job chain with the attempt, the tasks' durations
    page.goto(f"{server.base}/monitor/jobs?instance={seeded['instance']}")
    instance = page.get_by_test_id("instance-drawer")
    expect(instance).to_have_attribute("data-loaded", "true")
    page.get_by_test_id("drawer-tab-trace").click()
    chain = instance.get_by_test_id("job-chain")
    chain.locator(f"tr[data-row-key='{seeded['job']}'] .ant-table-row-expand-icon").click()
    expect(chain).to_contain_text(words["duration"])
    _read(page, lang, "instance-trace", chain.locator(".ant-table-expanded-row").first)
    page.get_by_test_id("drawer-tab-tasks").click()
    expect(page.get_by_test_id("view-tasks")).to_be_visible()
    _read(page, lang, "instance-tasks", page.get_by_test_id("view-tasks"))

    # engine diagnostics: heartbeat and oldest-due ages, pool and outbox counts
    page.goto(f"{server.base}/monitor/engine")
    expect(page.get_by_test_id("node-heartbeat").first).to_contain_text(HUMAN[lang])
    _read(page, lang, "engine")

    # analytics: average and handling durations, counts grouped (12,000 jobs of one type)
    page.goto(f"{server.base}/monitor/analytics")
    expect(page.get_by_test_id("panel-async-health")).to_contain_text(BULK_TYPE)
    expect(page.get_by_test_id("panel-async-health")).to_contain_text(words["bulk"])
    expect(page.get_by_test_id("totals-avgDuration")).to_contain_text(HUMAN[lang])
    expect(page.get_by_test_id("panel-node-bottlenecks")).to_contain_text(HUMAN[lang])
    _read(page, lang, "analytics")

    # health inspection: problem ages and counts
    page.goto(f"{server.base}/monitor/health")
    expect(page.get_by_test_id("health-groups")).to_be_visible()
    _read(page, lang, "health")
