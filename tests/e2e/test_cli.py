"""The CLI as a user runs it (issue 3): ``flowledger run`` on an empty SQLite
file prints an admin token that lists the demo's instances over HTTP;
``token create``, ``definitions deploy`` and ``instances start`` work as
script building blocks."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

GOOD = {
    "key": "cli_demo",
    "name": "CLI demo",
    "nodes": [
        {"key": "start", "type": "start"},
        {"key": "ok", "type": "approval", "assignees": {"users": ["alice"]}},
        {"key": "end", "type": "end"},
    ],
    "edges": [{"from": "start", "to": "ok"}, {"from": "ok", "to": "end"}],
}


def _env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "FLOWLEDGER_DATABASE_URL": f"sqlite:///{tmp_path / 'cli.db'}"}


def _cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "flowledger", *args],
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_run_prints_a_token_that_lists_the_demo_instances(tmp_path: Path) -> None:
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "flowledger", "run", "--port", str(port)],
        env=_env(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        cwd=tmp_path,
    )
    try:
        assert proc.stdout is not None
        token = proc.stdout.readline().strip()
        assert len(token) > 30
        deadline = time.monotonic() + 30
        while True:
            try:
                response = httpx.get(
                    f"http://127.0.0.1:{port}/api/workflows/instances",
                    headers={"Authorization": f"Bearer {token}"},
                    timeout=5,
                )
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, "the API never came up"
                time.sleep(0.2)
        assert response.status_code == 200
        items = response.json()["items"]
        assert len(items) >= 20
        assert {"running", "approved", "rejected"} <= {i["status"] for i in items}
        anonymous = httpx.get(f"http://127.0.0.1:{port}/api/workflows/instances", timeout=5)
        assert anonymous.status_code == 401
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0


def test_script_building_blocks(tmp_path: Path) -> None:
    good = tmp_path / "good.json"
    good.write_text(json.dumps(GOOD))
    deployed = _cli(tmp_path, "definitions", "deploy", str(good))
    assert deployed.returncode == 0, deployed.stderr
    assert "cli_demo" in deployed.stdout and "version 1" in deployed.stdout

    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "key: broken\nname: Broken\nnodes:\n  - {key: start, type: start}\n"
        "edges:\n  - {from: start, to: nowhere}\n"
    )
    refused = _cli(tmp_path, "definitions", "deploy", str(bad))
    assert refused.returncode == 2
    assert "nowhere" in refused.stderr

    started = _cli(tmp_path, "instances", "start", "cli_demo", "--form", "{}")
    assert started.returncode == 0, started.stderr
    assert started.stdout.strip().isdigit()

    token = _cli(
        tmp_path, "token", "create", "--user", "ops", "--permission", "workflow:instance:monitor"
    )
    assert token.returncode == 0, token.stderr
    assert len(token.stdout.strip().splitlines()) == 1  # the token alone, for scripts

    unknown = _cli(tmp_path, "token", "create", "--user", "x", "--permission", "nope")
    assert unknown.returncode == 2
