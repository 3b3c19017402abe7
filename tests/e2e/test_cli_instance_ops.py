"""``flowledger instances diagnose|force-jump|recover`` as a user runs them
(SPEC O-4, O-6, O-10, O-12; issue 10 item 11): on a SQLite file, diagnose
prints the verdict before the conclusions; force-jump shows the preview and
changes nothing unless confirmed (or ``--yes``); recover reports per
instance and totals."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

DEFINITION = {
    "key": "cli_ops",
    "name": "CLI ops",
    "nodes": [
        {"key": "start", "type": "start"},
        {"key": "desk", "type": "handle", "assignees": {"users": ["hal"]}},
        {"key": "boss", "type": "approval", "assignees": {"users": ["bea"]}},
        {"key": "end", "type": "end"},
    ],
    "edges": [
        {"from": "start", "to": "desk"},
        {"from": "desk", "to": "boss"},
        {"from": "boss", "to": "end"},
    ],
}


def _cli(tmp_path: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "FLOWLEDGER_DATABASE_URL": f"sqlite:///{tmp_path / 'cli.db'}",
        "COLUMNS": "200",
    }
    return subprocess.run(
        [sys.executable, "-m", "flowledger", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        input=stdin,
    )


def test_diagnose_force_jump_and_recover(tmp_path: Path) -> None:
    source = tmp_path / "def.json"
    source.write_text(json.dumps(DEFINITION), encoding="utf-8")
    assert _cli(tmp_path, "definitions", "deploy", str(source)).returncode == 0
    first = _cli(tmp_path, "instances", "start", "cli_ops").stdout.strip()
    second = _cli(tmp_path, "instances", "start", "cli_ops").stdout.strip()

    diagnosed = _cli(tmp_path, "instances", "diagnose", first)
    assert diagnosed.returncode == 0, diagnosed.stderr
    text = diagnosed.stdout
    assert text.index("verdict") < text.index("rule") < text.index("state")
    assert "desk" in text and "active" in text

    declined = _cli(
        tmp_path, "instances", "force-jump", first, "--target", "boss", "--reason", "r", stdin="n\n"
    )
    assert declined.returncode == 1
    assert "tasks terminated" in declined.stdout and "hal" in declined.stdout
    assert "nothing changed" in declined.stderr
    doc = json.loads(_cli(tmp_path, "instances", "diagnose", first, "--json").stdout)
    assert {n["key"]: n["state"] for n in doc["nodes"]}["desk"] == "active"

    done = _cli(
        tmp_path,
        "instances",
        "force-jump",
        first,
        "--target",
        "boss",
        "--reason",
        "by hand",
        stdin="y\n",
    )
    assert done.returncode == 0, done.stderr
    assert "jumped to boss" in done.stdout
    doc = json.loads(_cli(tmp_path, "instances", "diagnose", first, "--json").stdout)
    states = {n["key"]: n["state"] for n in doc["nodes"]}
    assert states["desk"] == "skipped" and states["boss"] == "active"
    desk = next(t for t in doc["tasks"] if t["nodeKey"] == "desk")
    assert desk["comment"] == "[Admin force jump to «boss»] by hand"

    refused = _cli(
        tmp_path, "instances", "force-jump", first, "--target", "x", "--reason", "r", "--yes"
    )
    assert refused.returncode == 2 and "node_unknown" in refused.stderr

    dry = _cli(
        tmp_path,
        "instances",
        "recover",
        "--definition",
        "cli_ops",
        "--node",
        "desk",
        "--stuck-minutes",
        "0",
        "--reason",
        "closed",
        "--dry-run",
    )
    assert dry.returncode == 0, dry.stderr
    assert "selected=1 advanced=1 skipped=0 failed=0" in dry.stdout
    real = _cli(
        tmp_path,
        "instances",
        "recover",
        "--definition",
        "cli_ops",
        "--node",
        "desk",
        "--stuck-minutes",
        "0",
        "--reason",
        "closed",
    )
    assert real.returncode == 0 and second in real.stdout
    assert "selected=1 advanced=1" in real.stdout
    again = _cli(
        tmp_path,
        "instances",
        "recover",
        "--definition",
        "cli_ops",
        "--node",
        "desk",
        "--stuck-minutes",
        "0",
        "--reason",
        "closed",
    )
    assert "selected=0" in again.stdout
