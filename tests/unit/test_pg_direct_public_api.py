"""db/pg_direct.py uses SQLAlchemy's public API only (issue 28 item 3): every
underscore attribute it reads or writes is one it defines itself, so no
SQLAlchemy private attribute (``_compile_w_cache``, ``_bind_processors``,
``_result_columns``, ``_handle_dbapi_exception``, ``_connection_cls`` …) is
used and pyproject needs no pin below SQLAlchemy's next minor version."""

from __future__ import annotations

import ast
from pathlib import Path

import flowledger.db.pg_direct as pg_direct

SOURCE = Path(pg_direct.__file__).read_text()

# Row._mapping is SQLAlchemy's documented public API despite its underscore
PUBLIC_UNDERSCORED = {"_mapping"}


def _defined(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            names.add(node.value)  # __slots__ entries
    return names


def _underscored_attributes(tree: ast.Module) -> set[str]:
    """Underscore attributes and keyword arguments (``_processors=``)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            found.add(node.attr)
        elif isinstance(node, ast.keyword) and node.arg is not None:
            found.add(node.arg)
    return {name for name in found if name.startswith("_") and not name.startswith("__")}


def test_pg_direct_reads_no_private_attribute_of_another_library() -> None:
    tree = ast.parse(SOURCE)
    foreign = _underscored_attributes(tree) - _defined(tree) - PUBLIC_UNDERSCORED
    assert not foreign, f"private attributes of another library: {sorted(foreign)}"


def test_the_check_finds_a_private_attribute() -> None:
    tree = ast.parse(SOURCE + "\n\ndef _probe(compiled):\n    return compiled._bind_processors\n")
    foreign = _underscored_attributes(tree) - _defined(tree) - PUBLIC_UNDERSCORED
    assert foreign == {"_bind_processors"}
