"""``flowledger instances list | show | export`` as a user runs them (SPEC
O-1, O-2, O-3): the list under the monitoring filters with its counts, one
instance in detail, and the CSV / XLSX export written to a file."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import openpyxl

from tests.e2e.test_cli import GOOD, _cli


def test_list_show_and_export(tmp_path: Path) -> None:
    source = tmp_path / "flow.json"
    source.write_text(json.dumps(GOOD), encoding="utf-8")
    assert _cli(tmp_path, "definitions", "deploy", str(source)).returncode == 0
    ids = []
    for note in ("=cmd", "出差"):
        started = _cli(
            tmp_path, "instances", "start", "cli_demo", "--form", "{}", "--initiator", note
        )
        assert started.returncode == 0, started.stderr
        ids.append(int(started.stdout.strip()))

    listed = _cli(tmp_path, "instances", "list", "--status", "running", "--assignee", "alice")
    assert listed.returncode == 0, listed.stderr
    assert str(ids[0]) in listed.stdout and str(ids[1]) in listed.stdout
    assert "running: 2" in listed.stdout
    none = _cli(tmp_path, "instances", "list", "--node", "nowhere")
    assert none.returncode == 0 and str(ids[0]) not in none.stdout
    by_keyword = _cli(tmp_path, "instances", "list", "--keyword", str(ids[1]))
    assert str(ids[1]) in by_keyword.stdout

    shown = _cli(tmp_path, "instances", "show", str(ids[0]))
    assert shown.returncode == 0, shown.stderr
    assert (
        "cli_demo" in shown.stdout
        and "alice" in shown.stdout
        and "instance_started" in shown.stdout
    )
    assert _cli(tmp_path, "instances", "show", "999999").returncode == 2

    target = tmp_path / "out.csv"
    exported = _cli(tmp_path, "instances", "export", "--output", str(target))
    assert exported.returncode == 0, exported.stderr
    assert "wrote 2 of 2" in exported.stdout
    raw = target.read_bytes()
    assert raw.startswith(b"\xef\xbb\xbf")
    rows = list(csv.reader(io.StringIO(raw.decode("utf-8-sig"))))
    initiator = rows[0].index("initiator")
    assert sorted(r[initiator] for r in rows[1:]) == ["'=cmd", "出差"]

    book = tmp_path / "out.xlsx"
    assert (
        _cli(tmp_path, "instances", "export", "-o", str(book), "--format", "xlsx").returncode == 0
    )
    sheet = openpyxl.load_workbook(book, read_only=True)["instances"]
    values = [r for r in sheet.iter_rows(values_only=True) if r[0] is not None]
    assert values[0][0] == "id" and {values[1][0], values[2][0]} == set(ids)
    assert values[-1][0] == "Exported all 2 matching instances."
