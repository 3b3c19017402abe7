"""The ``flowledger`` entry point imports the CLI with the collector paused
and frozen, and runs the command with the collector on (issue 15: a worker's
start-up is inside the ledger's peer-protocol drain)."""

from __future__ import annotations

import subprocess
import sys

PROBE = """
import gc, sys
import flowledger.cli.main as cli
seen = {}
def fake_main():
    seen['enabled'] = gc.isenabled()
    seen['frozen'] = gc.get_freeze_count()
cli.main = fake_main
sys.modules.pop('flowledger.cli.entry', None)
from flowledger.cli.entry import main
gc.unfreeze()
main()
print(seen['enabled'], seen['frozen'] > 10000)
"""


def test_entry_runs_the_command_with_the_collector_on_and_import_objects_frozen() -> None:
    out = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.split() == ["True", "True"]


def test_python_dash_m_and_the_console_script_use_the_entry_point() -> None:
    import tomllib
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    scripts = tomllib.loads((root / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["flowledger"] == "flowledger.cli.entry:main"
    assert "flowledger.cli.entry import main" in (root / "src/flowledger/__main__.py").read_text()
