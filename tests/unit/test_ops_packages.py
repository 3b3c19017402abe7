"""``ops/`` is in sub-packages that say what they are (issue 29 item 3): no
flat module beside them, each package named by ``ops/__init__``, and each
package's docstring naming every one of its modules (``:mod:`.name``` or the
absolute name) and the SPEC ids it serves. That the names resolve is
``test_docstring_references``'s business."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

OPS = Path(__file__).resolve().parents[2] / "src" / "flowledger" / "ops"
PACKAGES = sorted(p.name for p in OPS.iterdir() if (p / "__init__.py").exists())
SPEC_ID = re.compile(r"\b[LEXCOA]-\d+\b")


def _doc(package: Path) -> str:
    doc = ast.get_docstring(ast.parse((package / "__init__.py").read_text(encoding="utf-8")))
    assert doc, f"{package.name} has no docstring"
    return doc


def _named(doc: str, package: str = "flowledger.ops") -> set[str]:
    """The children a docstring names: ``:mod:`.name``` or the absolute
    ``:mod:`~flowledger.ops.<package>.name```."""
    prefix = re.escape(package + ".")
    return set(re.findall(rf":mod:`~?(?:\.|{prefix})(\w+)`", doc))


def test_ops_has_no_flat_module_item3() -> None:
    assert sorted(p.name for p in OPS.glob("*.py")) == ["__init__.py"]
    assert len(PACKAGES) >= 10


def test_ops_names_every_package_item3() -> None:
    assert _named(_doc(OPS)) == set(PACKAGES)


@pytest.mark.parametrize("name", PACKAGES)
def test_each_package_names_its_modules_and_spec_ids_item3(name: str) -> None:
    package = OPS / name
    doc = _doc(package)
    modules = {p.stem for p in package.glob("*.py") if p.stem != "__init__"}
    assert _named(doc, f"flowledger.ops.{name}") == modules
    assert SPEC_ID.search(doc), f"ops/{name}/__init__.py cites no SPEC id"
