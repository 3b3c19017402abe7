"""The import contract of flowledger's layers (issue 16 item 5;
docs/architecture.md draws them).

A module may import its own package and any package of a LOWER layer, never
one of its own layer's other packages nor a higher layer — a package listed
in a layer is independent of its neighbours there. Every ``import`` counts:
top-level, inside functions and under ``TYPE_CHECKING``. import-linter is
not in the project's environment, so the contract is checked here with the
standard library's :mod:`ast` over ``src/flowledger``; it runs in ``make
test`` with the rest of the suite.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "flowledger"

# top first; each layer's packages are independent of one another
LAYERS: list[set[str]] = [
    {"__main__"},  # python -m flowledger
    {"cli"},  # the commands
    {"api", "demo"},  # the HTTP API; the demo loader
    {"runtime"},  # wires everything below from the settings
    {"handlers"},  # the job handlers and maintenance services of the engine
    {"compensation", "ops"},  # failure policies and repair; operations read models
    {"events"},  # outbox, subscriptions, webhooks, automation
    {"actions"},  # the action runner of compensation and automation actions
    {"engine", "worker"},  # the process engine; the worker role
    {"access", "notify"},  # users, tokens, permissions, audit; in-app, e-mail, SMS
    {"outbound", "ledger"},  # outbound calls; the job ledger
    {"definitions"},  # parsing and validating process definitions
    {"db", "clock", "settings"},  # storage; time; configuration
    {"errors", "states"},  # the shared vocabulary
]
LAYER_OF = {package: rank for rank, layer in enumerate(LAYERS) for package in layer}


def package_of(path: Path, root: Path) -> str:
    parts = path.relative_to(root).parts
    return parts[0].removesuffix(".py")


def imported(tree: ast.AST) -> Iterable[tuple[int, str]]:
    """(line, imported flowledger package) for every import in ``tree``."""
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        for name in names:
            parts = name.split(".")
            if parts[0] == "flowledger" and len(parts) > 1:
                yield node.lineno, parts[1]


def violations(sources: dict[str, str]) -> list[str]:
    """The imports that break the contract in ``sources`` (a path inside the
    package, like ``engine/step.py``, mapped to its text)."""
    found: list[str] = []
    for name, text in sorted(sources.items()):
        own = package_of(Path(name), Path())
        if own not in LAYER_OF:
            found.append(f"{name}: package {own!r} is in no layer")
            continue
        for line, target in imported(ast.parse(text)):
            if target == own:
                continue
            if target not in LAYER_OF:
                found.append(f"{name}:{line}: imports {target!r}, which is in no layer")
            elif LAYER_OF[target] <= LAYER_OF[own]:
                way = "across its layer" if LAYER_OF[target] == LAYER_OF[own] else "upward"
                found.append(f"{name}:{line}: {own} imports {target} ({way})")
    return found


def tree_sources() -> dict[str, str]:
    return {
        str(path.relative_to(SRC)): path.read_text(encoding="utf-8")
        for path in SRC.rglob("*.py")
        if "__init__.py" != path.name or path.parent != SRC
    }


def test_no_module_imports_upward_or_across_its_layer() -> None:
    assert violations(tree_sources()) == []


def test_every_package_has_a_layer() -> None:
    packages = {package_of(p, SRC) for p in SRC.iterdir() if p.suffix == ".py" or p.is_dir()}
    packages -= {"__init__", "__pycache__"}
    assert packages - set(LAYER_OF) == set()


TYPE_CHECKED = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import flowledger.api\n"


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        ("ledger/x.py", "from flowledger.engine import Engine\n", "ledger imports engine (upward)"),
        ("engine/x.py", "def f():\n    import flowledger.worker.pool\n", "(across its layer)"),
        ("db/x.py", TYPE_CHECKED, "db imports api (upward)"),
    ],
)
def test_the_contract_catches_an_upward_import(name: str, text: str, expected: str) -> None:
    (found,) = violations({name: text})
    assert expected in found


def test_a_downward_import_passes() -> None:
    assert violations({"api/x.py": "from flowledger.engine.step import Step\n"}) == []
