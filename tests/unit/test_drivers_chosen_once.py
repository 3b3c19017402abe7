"""Drivers on the runtime (issue 28 item 4): product code never picks a
ledger driver by the connection's dialect per call — it holds the driver
chosen once for its database (``Runtime.ledger``, ``Engine.store.ledger``,
``JobContext.ledger``, a service's ``self.ledger``). Only the driver
package defines the per-connection lookup and only the deprecated
module-level enqueue of ``flowledger.worker`` still uses it."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "flowledger"
ALLOWED = {"ledger/driver/__init__.py", "worker/deprecated.py"}


def _uses(path: Path) -> bool:
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id == "ledger_for":
            return True
        if isinstance(node, ast.alias) and node.name == "ledger_for":
            return True
    return False


def test_no_module_looks_a_ledger_driver_up_per_connection() -> None:
    found = sorted(
        str(path.relative_to(SRC))
        for path in SRC.rglob("*.py")
        if str(path.relative_to(SRC)) not in ALLOWED and _uses(path)
    )
    assert found == [], f"modules looking the ledger driver up per call: {found}"
