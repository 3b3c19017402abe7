"""Docstrings stay true to the tree (issue 29 item 7; STYLE: a docstring on
every public module saying what it owns).

Every module and package docstring under ``src/flowledger`` is read, and
every reference in it must name something that exists:

- a Sphinx role naming a flowledger object (``:mod:`flowledger.db.wake```,
  ``:func:`~flowledger.actions.runner.update_form```, a package-relative
  ``:mod:`.instances```): the module imports, and the object is an attribute
  of it;
- a path of the package in double backticks (``ledger/driver/``,
  ``api/routers/tasks.py``): the file or folder exists under
  ``src/flowledger``.

And a package whose docstring lists its modules says so for every one of
them: ``api/routers/`` names each of its routers. The checks are shown to
find a stale reference.
"""

from __future__ import annotations

import ast
import importlib
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"
PACKAGE = SRC / "flowledger"

ROLE = re.compile(r":(?:mod|func|class|data|meth|attr|exc|obj):`~?(\.?[\w.]+)`")
PATH = re.compile(r"``((?:[a-z_]+/)+(?:[a-z_]+\.py)?)``")
TOP = {p.name for p in PACKAGE.iterdir() if p.is_dir() or p.suffix == ".py"}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _docstrings() -> Iterator[tuple[Path, str, str]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        if "migrations" in path.parts:
            continue
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")), clean=False)
        if doc:
            yield path, _module_name(path), doc


def _is_field(cls: object, name: str) -> bool:
    """A declared field of a class without a class attribute (a dataclass
    field without a default)."""
    return isinstance(cls, type) and any(
        name in vars(klass).get("__annotations__", {}) for klass in cls.__mro__
    )


def _resolves(target: str, module: str, is_package: bool) -> bool:
    """Whether ``target`` (absolute ``flowledger.…`` or package-relative
    ``.name``) names a module or an attribute of one."""
    if target.startswith("."):
        base = module if is_package else module.rpartition(".")[0]
        target = base + target
    if not target.startswith("flowledger"):
        return True  # another library's object: not this test's business
    parts = target.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj: object = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for name in parts[cut:]:
            if not hasattr(obj, name):
                return _is_field(obj, name)
            obj = getattr(obj, name)
        return True
    return False


def stale_references(path: Path, module: str, doc: str) -> list[str]:
    is_package = path.name == "__init__.py"
    stale = [
        f":{target}"
        for target in ROLE.findall(doc)
        if not _resolves(target.rstrip("."), module, is_package)
    ]
    for relative in PATH.findall(doc):
        if relative.split("/", 1)[0] in TOP and not (PACKAGE / relative).exists():
            stale.append(relative)
    return stale


def test_every_docstring_reference_names_something_that_exists_item7() -> None:
    found = {
        module: stale
        for path, module, doc in _docstrings()
        if (stale := stale_references(path, module, doc))
    }
    assert found == {}


def test_the_routers_package_names_every_router_item7() -> None:
    routers = PACKAGE / "api" / "routers"
    doc = ast.get_docstring(ast.parse((routers / "__init__.py").read_text(encoding="utf-8")))
    assert doc is not None
    named = set(re.findall(r":mod:`\.(\w+)`", doc))
    modules = {p.stem for p in routers.glob("*.py") if p.stem != "__init__"}
    assert named == modules


@pytest.mark.parametrize(
    ("doc", "stale"),
    [
        (":mod:`flowledger.api.authorize_first` reads source", [":flowledger.api.authorize_first"]),
        (":func:`~flowledger.actions.runner.gone`", [":flowledger.actions.runner.gone"]),
        (":mod:`.no_such_router`", [":.no_such_router"]),
        ("statements in ``ledger/driver/nothing.py``", ["ledger/driver/nothing.py"]),
        (":mod:`flowledger.db.wake` and ``api/routers/``", []),
    ],
)
def test_the_check_finds_a_stale_reference_item7(doc: str, stale: list[str]) -> None:
    init = PACKAGE / "api" / "routers" / "__init__.py"
    assert stale_references(init, "flowledger.api.routers", doc) == stale
