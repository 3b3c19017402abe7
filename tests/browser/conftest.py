"""Browser tests of the web console (issue 13 item 9): pytest + Playwright
driving Debian's ``chromium`` (never a downloaded browser) against one real
``flowledger run`` per session on a temporary SQLite database with the demo
data, on a free port.

Every page fixture fails its test on a JavaScript console error (a missing
i18n key is one) or warning (a library's deprecation notice, such as React
Router's future flags before main.tsx opted in), an uncaught exception, a
failed request or an HTTP error
response — unless the test declared that exact response with
``watch.allow(status, url_part)``. Screenshots go to
``build/browser-artifacts/`` (or ``$FLOWLEDGER_BROWSER_ARTIFACTS``), never
into the repository.
"""

from __future__ import annotations

import os
import queue
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import httpx
import pytest

pytest.importorskip("playwright")  # a dev dependency; the import error would be clearer
from playwright.sync_api import Browser, Page, expect, sync_playwright

# assertions wait as long as actions do: CI runs two workers on two cores
expect.set_options(timeout=20_000)

ROOT = Path(__file__).resolve().parents[2]
DIST = ROOT / "web" / "dist" / "index.html"
CHROMIUM = os.environ.get("FLOWLEDGER_CHROMIUM", "/usr/bin/chromium")
ARTIFACTS = Path(
    os.environ.get("FLOWLEDGER_BROWSER_ARTIFACTS", ROOT / "build" / "browser-artifacts")
)
LANGS = ("zh-CN", "en")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Server:
    base: str
    token: str
    login_url: str
    log: Path
    db_url: str
    cwd: Path
    env: dict[str, str]

    def api(self, token: str | None = None) -> httpx.Client:
        return httpx.Client(
            base_url=f"{self.base}/api/workflows",
            headers={"Authorization": f"Bearer {token or self.token}"},
            timeout=30,
        )

    def cli(self, *args: str) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "flowledger", *args],
            env=self.env,
            cwd=self.cwd,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()


def _read_lines(stream: Any, out: queue.Queue[str]) -> None:
    for line in stream:
        out.put(line.rstrip("\n"))


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """One ``flowledger run`` with the demo for the session's browser tests."""
    with run_server(tmp_path_factory) as running:
        yield running


@contextmanager
def run_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """Start a real ``flowledger run`` on a new SQLite file with the demo
    data, on a free port; stop it after. A test file that must see the demo
    exactly as shipped (nothing repaired by an earlier file) overrides the
    ``server`` fixture with a module-scoped one built on this."""
    if not DIST.is_file():
        pytest.fail("the console is not built: run `make web-build` (make test builds it)")
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: apt-get install -y chromium (.ci/run does)")
    cwd = tmp_path_factory.mktemp("flowledger-run")
    port = _free_port()
    db_url = f"sqlite:///{cwd / 'console.db'}"
    env = {
        **os.environ,
        "FLOWLEDGER_DATABASE_URL": db_url,
        "FLOWLEDGER_ATTACHMENTS_DIR": str(cwd / "attachments"),
        "FLOWLEDGER_SECRET_KEY_FILE": str(cwd / "flowledger.key"),
        "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]),
    }
    log = cwd / "server.log"
    with log.open("w") as log_file:
        proc = subprocess.Popen(
            [sys.executable, "-m", "flowledger", "run", "--port", str(port)],
            env=env,
            cwd=cwd,
            stdout=subprocess.PIPE,
            stderr=log_file,
            text=True,
        )
        lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=_read_lines, args=(proc.stdout, lines), daemon=True).start()
        try:
            token = lines.get(timeout=120)
            login_url = lines.get(timeout=30)
            assert login_url.startswith(f"http://127.0.0.1:{port}/login#code="), login_url
            base = f"http://127.0.0.1:{port}"
            deadline = time.monotonic() + 60
            while True:
                try:
                    httpx.get(f"{base}/api/openapi.json", timeout=5).raise_for_status()
                    break
                except httpx.HTTPError:
                    assert time.monotonic() < deadline, "the server never came up"
                    time.sleep(0.2)
            yield Server(base, token, login_url, log, db_url, cwd, env)
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            shutil.copy(log, ARTIFACTS / "server.log")


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    # module scope: Playwright's sync API keeps an event loop running in this
    # thread while it is open, so it must be closed before another test file
    # of the same xdist worker calls asyncio.run
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            yield b
        finally:
            b.close()


@dataclass
class Watch:
    """What went wrong in the page; ``allow`` declares an expected error response."""

    problems: list[str] = field(default_factory=list)
    allowed: list[tuple[int, str]] = field(default_factory=list)

    def allow(self, status: int, url_part: str) -> None:
        self.allowed.append((status, url_part))

    def response(self, status: int, url: str) -> None:
        if status < 400:
            return
        if any(status == s and part in url for s, part in self.allowed):
            return
        self.problems.append(f"HTTP {status} {url}")


# the live console's change stream (issue 33 item 2): open for as long as
# the page is, so the browser's network never goes idle while it is
LIVE_STREAM = "/api/workflows/events/stream"
_INFLIGHT: weakref.WeakKeyDictionary[Page, set[Any]] = weakref.WeakKeyDictionary()


def quiet_network(page: Page, *, quiet_ms: int = 500, timeout_s: float = 15.0) -> None:
    """``page.wait_for_load_state("networkidle")`` for the console: no request
    in flight for ``quiet_ms``, the live change stream not counted (it never
    ends while the page is open)."""
    page.wait_for_load_state("load")
    inflight = _INFLIGHT[page]
    deadline = time.monotonic() + timeout_s
    quiet_since: float | None = None
    while True:
        now = time.monotonic()
        if any(LIVE_STREAM not in request.url for request in inflight):
            quiet_since = None
        elif quiet_since is None:
            quiet_since = now
        elif now - quiet_since >= quiet_ms / 1000:
            return
        assert now < deadline, f"requests still in flight: {[r.url for r in inflight]}"
        page.wait_for_timeout(50)


def _track_requests(page: Page) -> None:
    inflight: set[Any] = set()
    _INFLIGHT[page] = inflight
    page.on("request", lambda request: inflight.add(request))
    page.on("requestfinished", lambda request: inflight.discard(request))
    page.on("requestfailed", lambda request: inflight.discard(request))


def _attach(page: Page, watch: Watch) -> None:
    _track_requests(page)

    def console(msg: Any) -> None:
        if msg.type == "warning":
            watch.problems.append(f"console warning: {msg.text}")
        if msg.type == "error":
            text = msg.text
            # the browser's own line for an HTTP error response: judged by `response`
            if text.startswith("Failed to load resource"):
                return
            watch.problems.append(f"console error: {text}")

    page.on("console", console)
    page.on("pageerror", lambda exc: watch.problems.append(f"page error: {exc}"))
    page.on(
        "requestfailed",
        lambda req: (
            None
            if (req.failure or "").endswith("ERR_ABORTED")
            else watch.problems.append(f"request failed: {req.url} {req.failure}")
        ),
    )
    page.on("response", lambda r: watch.response(r.status, r.url))


Opener = Callable[..., tuple[Page, Watch]]


@pytest.fixture
def open_console(browser: Browser, server: Server) -> Iterator[Opener]:
    """``open_console(lang, token=None, path="/monitor/jobs", motion=False,
    color_scheme="light")`` → (page, watch): a fresh browser context in
    ``lang`` signed in with ``token`` (the admin's by default; ``""`` for
    none), preferring reduced motion unless ``motion``, with the system color
    scheme ``color_scheme`` ("light" or "dark"). The test fails on any
    unexpected problem."""
    opened: list[tuple[Any, Watch]] = []

    def open_(
        lang: str = "en",
        token: str | None = None,
        path: str | None = "/monitor/jobs",
        motion: bool = False,
        color_scheme: Literal["light", "dark"] = "light",
    ) -> tuple[Page, Watch]:
        # The browser reports the operator preference "reduce motion" unless
        # ``motion``: the console then opens dialogs, drawers and dropdowns
        # without their zoom and slide animations, so a click never lands
        # where a still-moving button was (two loaded CI runs lost a dialog's
        # OK press that way, on the mask behind it).
        context = browser.new_context(
            viewport={"width": 1440, "height": 900},
            locale=lang,
            reduced_motion="no-preference" if motion else "reduce",
            # the system preference the console's theme follows (issue 33 item 3)
            color_scheme=color_scheme,
            timezone_id="Asia/Shanghai" if lang == "zh-CN" else "Europe/Berlin",
            accept_downloads=True,
        )
        context.set_default_timeout(15_000)
        script = f"window.localStorage.setItem('flowledger.lang', {lang!r});"
        value = server.token if token is None else token
        if value:
            script += f"window.localStorage.setItem('flowledger.token', {value!r});"
        context.add_init_script(
            "if (!sessionStorage.getItem('seeded')) {"
            f" {script} sessionStorage.setItem('seeded', '1'); }}"
        )
        page = context.new_page()
        watch = Watch()
        _attach(page, watch)
        opened.append((context, watch))
        if path is not None:
            page.goto(server.base + path)
        return page, watch

    yield open_
    problems = [p for _, w in opened for p in w.problems]
    for context, _ in opened:
        context.close()
    assert not problems, "\n".join(problems)


def shot(page: Page, name: str) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path
