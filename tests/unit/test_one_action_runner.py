"""One action runner (issue 29 item 5, SPEC C-4, X-6): the ``updateData``
form write, the outcome of a recorded skip and the actor the actions act as
exist once, in :mod:`flowledger.actions.runner`. Compensation's and
automation's runners and the engine's job handlers use them; no module
above the engine writes a form, maps a skip or names the actor itself.
(Their behaviour — a finished instance's form is final, a refused value is a
permanent failure — is tested through both runners in
``tests/compensation/test_action_channels.py`` and
``tests/events/test_automation_jobs.py``.)"""

from __future__ import annotations

import re
from pathlib import Path

from flowledger.actions import runner
from flowledger.engine.tasks import SYSTEM
from flowledger.worker import Skip

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "flowledger"
OWN = {"actions/runner.py"}
CHECKS = {
    "writes a form": re.compile(r"\bwrite_form\("),
    "maps a skip": re.compile(r"def _?outcome\("),
    "names the system actor": re.compile(r"^\s*[A-Z_]+\s*=\s*\"system\"\s*$", re.MULTILINE),
}


def test_the_action_runner_owns_them_item5() -> None:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = str(path.relative_to(PACKAGE))
        if relative in OWN or relative.startswith("engine/"):
            continue
        text = path.read_text(encoding="utf-8")
        found += [f"{relative} {what}" for what, check in CHECKS.items() if check.search(text)]
    assert found == []


def test_outcome_and_actor_item5() -> None:
    assert runner.SYSTEM_ACTOR == SYSTEM == "system"
    skipped = runner.outcome({"skipped": "instance 3 is completed; its form is final"})
    assert isinstance(skipped, Skip)
    assert runner.outcome({"fields": {"a": 1}}) == {"fields": {"a": 1}}
