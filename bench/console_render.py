"""Render time of the console's instance monitoring at scale (issue 14, the
"Done when" of items 1 and 2):

    python bench/console_render.py [--instances 100000] [--db URL] [--runs 5]

1. a fresh database — by default ``flowledger_bench_console`` on the local
   PostgreSQL, dropped and created (``--db URL``: any database, whose
   instances and jobs are EMPTIED) — filled with N instances by
   :func:`bench.monitor_fill.fill_instances` (~10 tasks, ~8 tokens, ~30
   trace rows, ~5 jobs each); ``--reuse`` times an already filled one;
2. a real ``flowledger serve`` on a free port serving the built console
   (``web/dist``), and an admin token (a user with every permission);
3. Playwright with Debian's ``/usr/bin/chromium``, a fresh browser context
   per run (nothing cached), RUNS runs after one warm-up:
   (a) navigation to ``/monitor/instances`` until the first table row is
       visible, and the list request's own time (API versus render);
   (b) navigation to ``/monitor/instances?instance=<a running id>`` until the
       drawer's verdict is visible (``drawer: not available`` when the drawer
       is not in this build).
Prints every run, then the median and max; last line
``instances_first_rows_ms=… drawer_verdict_ms=…``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import psycopg
from playwright.sync_api import Browser, Request, sync_playwright
from playwright.sync_api import TimeoutError as PlaywrightTimeout

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.monitor_queries import prepare, start_server

ADMIN = "postgresql://postgres@127.0.0.1:5432/postgres"
NAME = "flowledger_bench_console"
CHROMIUM = "/usr/bin/chromium"
ROWS = "[data-testid=instances-table] [data-testid^=instance-link-]"
VERDICT = "[data-testid=instance-drawer] [data-testid=drawer-verdict]"
LIST_API = "/api/workflows/instances?"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def fresh_database() -> str:
    with psycopg.connect(ADMIN, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{NAME}"')
        admin.execute(f'CREATE DATABASE "{NAME}"')
    return f"{ADMIN.rsplit('/', 1)[0]}/{NAME}"


# marks (performance.now(), from the navigation's start) when the layout (the
# shell every page shares) and `selector` are first in the DOM
SHELL = "[data-testid=current-user]"
MARK = """
new MutationObserver((_, observer) => {
  if (!window.__shell && document.querySelector(%s)) window.__shell = performance.now();
  if (document.querySelector(%s)) {
    window.__shown = performance.now();
    observer.disconnect();
  }
}).observe(document, {subtree: true, childList: true});
"""


@dataclass
class Run:
    wall_ms: float  # from page.goto to Playwright seeing the selector visible
    dom_ms: float  # from the navigation's start to the element in the DOM (in the page)
    api_ms: float | None  # the list request itself (request start to response end)
    shell_ms: float  # from the navigation's start to the layout in the DOM


def navigate(
    browser: Browser, base: str, token: str, path: str, selector: str, timeout_ms: float
) -> Run | None:
    """One navigation in a fresh context; None when ``selector`` never shows."""
    context = browser.new_context(viewport={"width": 1440, "height": 900}, locale="en")
    context.add_init_script(
        f"window.localStorage.setItem('flowledger.token', {token!r});"
        "window.localStorage.setItem('flowledger.lang', 'en');"
        + MARK
        % (json.dumps(SHELL), json.dumps(selector))
    )
    api_ms: list[float] = []

    def finished(request: Request) -> None:
        if LIST_API in request.url:
            timing = request.timing
            api_ms.append(timing["responseEnd"] - timing["requestStart"])

    page = context.new_page()
    page.on("requestfinished", finished)
    try:
        t0 = time.perf_counter()
        page.goto(base + path, wait_until="commit")
        try:
            page.wait_for_selector(selector, state="visible", timeout=timeout_ms)
        except PlaywrightTimeout:
            return None
        elapsed = (time.perf_counter() - t0) * 1000
        marks = page.evaluate("[window.__shown, window.__shell ?? window.__shown]")
        return Run(elapsed, float(marks[0]), api_ms[0] if api_ms else None, float(marks[1]))
    finally:
        context.close()


def summary(name: str, values: list[float]) -> str:
    return f"{name}: median {statistics.median(values):.0f} ms, max {max(values):.0f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--db", help=f"database URL (default: a fresh {NAME} on {ADMIN})")
    parser.add_argument("--instances", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--reuse", action="store_true", help="time an already filled database")
    parser.add_argument("--skip-drawer", action="store_true", help="measure (a) only")
    args = parser.parse_args()

    url = args.db or (f"{ADMIN.rsplit('/', 1)[0]}/{NAME}" if args.reuse else fresh_database())
    token, instance_id = asyncio.run(prepare(url, args.instances, fill=not args.reuse))
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    server = start_server(url, port)
    results: dict[str, float | None] = {"instances_first_rows_ms": None, "drawer_verdict_ms": None}
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            cases = [
                ("instances first rows", "/monitor/instances", ROWS, "instances_first_rows_ms")
            ]
            if not args.skip_drawer:
                cases.append(
                    (
                        "drawer verdict",
                        f"/monitor/instances?instance={instance_id}",
                        VERDICT,
                        "drawer_verdict_ms",
                    )
                )
            for label, path, selector, key in cases:
                runs: list[Run] = []
                for n in range(args.runs + 1):
                    got = navigate(browser, base, token, path, selector, 15_000)
                    if got is None:
                        missing = key == "drawer_verdict_ms"
                        print("drawer: not available" if missing else f"{label}: never visible")
                        break
                    api_text = "n/a" if got.api_ms is None else f"{got.api_ms:.0f} ms"
                    print(
                        f"{label} run {n}{' (warm-up)' if n == 0 else ''}: {got.wall_ms:.0f} ms"
                        f" (layout in the DOM at {got.shell_ms:.0f} ms, the element at"
                        f" {got.dom_ms:.0f} ms, list API {api_text})"
                    )
                    if n:
                        runs.append(got)
                if runs:
                    totals = [r.wall_ms for r in runs]
                    apis = [r.api_ms for r in runs if r.api_ms is not None]
                    print(summary(label, totals))
                    print(summary(f"{label}, in the DOM", [r.dom_ms for r in runs]))
                    print(summary("layout in the DOM", [r.shell_ms for r in runs]))
                    if apis:
                        print(summary("list API", apis))
                    results[key] = statistics.median(totals)
            browser.close()
    finally:
        server.terminate()
        server.wait(timeout=30)
    print(" ".join(f"{k}={'n/a' if v is None else f'{v:.0f}'}" for k, v in results.items()))


if __name__ == "__main__":
    main()
