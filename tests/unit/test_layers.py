"""flowledger's import contracts (issue 16 item 5, issue 28 item 7): they are
import-linter's, in ``[tool.importlinter]`` of ``pyproject.toml``, and
``make lint`` runs ``lint-imports``; docs/architecture.md draws them.

- ``layers``: a module imports its own package and lower layers only, never
  a package of its own layer nor a higher one; exhaustive, so a new
  top-level package must be placed;
- ``acyclic``: the modules (and sub-packages, each taken whole) of every
  package form a DAG, with the cycles other packages still have named as
  ignored imports;
- ``engine-init``: no module of ``engine/`` imports the package's own
  ``__init__`` (which re-exports ``Engine``, and so everything).

grimp counts every import: top-level, inside functions, under
``TYPE_CHECKING``. These tests run the linter over the tree, and run the
project's own contracts over small stand-in packages to show that each one
catches what it forbids.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
# the lint-imports script, run by this interpreter
LINT = "import sys, importlinter.cli as cli; sys.exit(cli.lint_imports_command())"


def lint_imports(cwd: Path, src: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``lint-imports`` in ``cwd`` over the ``flowledger`` package in ``src``."""
    path = [str(src), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(path)}
    return subprocess.run(
        [sys.executable, "-c", LINT, "--no-cache", "--no-logo", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )


def contracts() -> dict[str, Any]:
    with (ROOT / "pyproject.toml").open("rb") as f:
        config: dict[str, Any] = tomllib.load(f)["tool"]["importlinter"]
    return config


def test_the_tree_keeps_every_contract() -> None:
    done = lint_imports(ROOT, ROOT / "src")
    assert done.returncode == 0, done.stdout + done.stderr
    for contract in contracts()["contracts"]:
        assert f"{contract['name']} KEPT" in done.stdout


# ------------------------------------------------- the contracts catch violations

TYPE_CHECKED = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import {}\n"
IN_FUNCTION = "def f() -> None:\n    import {}\n"


def stand_in(tmp_path: Path, files: dict[str, str]) -> Path:
    """A ``flowledger`` with one empty package per name the layers list, plus
    ``files``; the project's contracts, their ignored imports (made for the
    real tree) not required to match."""
    config = contracts()
    package = tmp_path / "src" / "flowledger"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (layers,) = (c for c in config["contracts"] if c["id"] == "layers")
    for layer in layers["layers"]:
        for name in (n.strip() for n in layer.split("|")):
            if name == "__main__":
                (package / "__main__.py").write_text("")
            else:
                (package / name).mkdir()
                (package / name / "__init__.py").write_text("")
    for name, text in files.items():
        path = package / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if not (path.parent / "__init__.py").exists():
            (path.parent / "__init__.py").write_text("")
        path.write_text(text)
    lines = ["[tool.importlinter]", 'root_package = "flowledger"']
    for contract in config["contracts"]:
        lines.append("[[tool.importlinter.contracts]]")
        contract = {**contract, "unmatched_ignore_imports_alerting": "none"}
        lines += [f"{key} = {json.dumps(value)}" for key, value in contract.items()]
    (tmp_path / "pyproject.toml").write_text("\n".join(lines) + "\n")
    return tmp_path


def broken(tmp_path: Path, files: dict[str, str]) -> set[str]:
    """The ids of the contracts the stand-in with ``files`` breaks."""
    done = lint_imports(stand_in(tmp_path, files), tmp_path / "src")
    found = {c["id"] for c in contracts()["contracts"] if f"{c['name']} BROKEN" in done.stdout}
    assert done.returncode == (1 if found else 0), done.stdout + done.stderr  # not an error
    return found


@pytest.mark.parametrize(
    ("files", "contract"),
    [
        pytest.param(
            {"ledger/x.py": "from flowledger.engine import x\n", "engine/x.py": ""},
            "layers",
            id="upward",
        ),
        pytest.param(
            {"engine/x.py": IN_FUNCTION.format("flowledger.worker")},
            "layers",
            id="across-a-layer-in-a-function",
        ),
        pytest.param(
            {"db/x.py": TYPE_CHECKED.format("flowledger.api")},
            "layers",
            id="upward-under-type-checking",
        ),
        pytest.param({"newcomer/__init__.py": ""}, "layers", id="a-package-in-no-layer"),
        pytest.param(
            {
                "engine/runner.py": "import flowledger.engine.nodes.x\n",
                "engine/nodes/x.py": IN_FUNCTION.format("flowledger.engine.runner"),
            },
            "acyclic",
            id="a-lazy-import-closing-a-cycle",
        ),
        pytest.param(
            {
                "engine/step.py": "import flowledger.engine.hooks\n",
                "engine/hooks.py": TYPE_CHECKED.format("flowledger.engine.step"),
            },
            "acyclic",
            id="a-cycle-under-type-checking",
        ),
        pytest.param(
            {"ops/a.py": "import flowledger.ops.b\n", "ops/b.py": "import flowledger.ops.a\n"},
            "acyclic",
            id="a-cycle-in-another-package",
        ),
        pytest.param(
            {"engine/x.py": "from flowledger.engine import Engine\n"},
            "engine-init",
            id="engine-init",
        ),
    ],
)
def test_a_contract_catches_its_violation(
    tmp_path: Path, files: dict[str, str], contract: str
) -> None:
    assert broken(tmp_path, files) == {contract}


def test_a_downward_import_passes(tmp_path: Path) -> None:
    files = {"api/x.py": "from flowledger.engine import step\n", "engine/step.py": ""}
    assert broken(tmp_path, files) == set()
