"""Running ``python -m flowledger …`` as a user runs it, for the CLI tests:
a subprocess on its own SQLite file under ``tmp_path`` with no
``FLOWLEDGER_*`` setting of the test process but the secret key."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def run_cli(
    tmp_path: Path, database: str, *args: str, code: int = 0
) -> subprocess.CompletedProcess[str]:
    """Run the CLI with ``args`` on ``tmp_path/database``; assert its exit
    ``code`` and return the finished process (stdout, stderr)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("FLOWLEDGER_")}
    env["FLOWLEDGER_DATABASE_URL"] = f"sqlite:///{tmp_path / database}"
    env["FLOWLEDGER_SECRET_KEY"] = os.environ["FLOWLEDGER_SECRET_KEY"]
    done = subprocess.run(
        [sys.executable, "-m", "flowledger", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert done.returncode == code, (args, done.stdout, done.stderr)
    return done
