"""No dialect branch outside a driver package (issue 16, "Done when", first
bullet; issue 28 item 5: "only inside a driver package").

SQL that differs between PostgreSQL and SQLite lives in a driver package:
``db/`` (the schema, the connection and the portable constructs — the
per-dialect constructs of :mod:`flowledger.db.portable`, the aggregates of
:mod:`flowledger.db.aggregates`, the planner settings of
:mod:`flowledger.db.planner` and the upsert of :mod:`flowledger.db.dialects`),
the ledger's driver (``ledger/driver/``: its statements in
``postgres_sql.py`` and ``sqlite_sql.py``) and the engine's store
(``engine/store/``). Code outside them never decides by the database kind.
The scan below (the standard library's :mod:`ast` over ``src/flowledger``,
the driver packages excluded) reports, as a dialect branch:

- reading ``is_sqlite`` (``db.is_sqlite``, ``self.is_sqlite``, ...);
- reading ``<x>.dialect.name`` and calling ``dialect_name(...)``;
- indexing by ``<x>.dialect`` (a table of per-dialect choices);
- a comparison with ``"sqlite"`` / ``"postgresql"`` or the constants
  ``SQLITE`` / ``POSTGRESQL``, or of a ``<x>.dialect`` value;
- a dialect flag handed along: a parameter or keyword argument named
  ``sqlite``, ``is_sqlite`` or ``postgresql``.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "flowledger"

DIALECT_LITERALS = {"sqlite", "postgresql"}
DIALECT_CONSTANTS = {"SQLITE", "POSTGRESQL"}
FLAG_NAMES = {"sqlite", "is_sqlite", "postgresql"}

# The driver packages (relative to src/flowledger): the only places that may
# branch on the dialect, each with what it holds.
DRIVER_PACKAGES: dict[str, str] = {
    "db/": "the schema, the connection and the portable constructs",
    "ledger/driver/": "the ledger's drivers and their statements",
    "engine/store/": "the engine's step writes, per dialect",
}


def _is_dialect_attr(node: ast.AST) -> bool:
    """``<x>.dialect``."""
    return isinstance(node, ast.Attribute) and node.attr == "dialect"


def _is_dialect_value(node: ast.AST) -> bool:
    """An expression naming a dialect: a dialect literal or constant,
    ``<x>.dialect``, ``<x>.dialect.name`` or ``dialect_name(...)`` (or a
    tuple, list or set holding one)."""
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return any(_is_dialect_value(element) for element in node.elts)
    if isinstance(node, ast.Constant) and node.value in DIALECT_LITERALS:
        return True
    if isinstance(node, ast.Name) and node.id in DIALECT_CONSTANTS:
        return True
    if isinstance(node, ast.Attribute) and node.attr in DIALECT_CONSTANTS:
        return True
    if _is_dialect_attr(node):
        return True
    if isinstance(node, ast.Attribute) and node.attr == "name" and _is_dialect_attr(node.value):
        return True
    return isinstance(node, ast.Call) and _callee(node) == "dialect_name"


def _callee(node: ast.Call) -> str | None:
    if isinstance(node.func, ast.Name):
        return node.func.id
    if isinstance(node.func, ast.Attribute):
        return node.func.attr
    return None


def branches(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """(line, what) for every dialect branch in ``tree``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr == "is_sqlite":
            yield node.lineno, "reads is_sqlite"
        elif (
            isinstance(node, ast.Attribute) and node.attr == "name" and _is_dialect_attr(node.value)
        ):
            yield node.lineno, "reads <x>.dialect.name"
        elif isinstance(node, ast.Call) and _callee(node) == "dialect_name":
            yield node.lineno, "calls dialect_name()"
        elif isinstance(node, ast.Subscript) and _is_dialect_attr(node.slice):
            yield node.lineno, "indexes by <x>.dialect"
        elif isinstance(node, ast.Compare) and any(
            _is_dialect_value(operand) for operand in [node.left, *node.comparators]
        ):
            yield node.lineno, "compares with a dialect"
        elif isinstance(node, ast.keyword) and node.arg in FLAG_NAMES:
            yield node.value.lineno, f"passes a dialect flag {node.arg}="
        elif isinstance(node, ast.arg) and node.arg in FLAG_NAMES:
            yield node.lineno, f"takes a dialect flag {node.arg}"


def _scanned() -> Iterator[tuple[str, Path]]:
    for path in sorted(SRC.rglob("*.py")):
        relative = path.relative_to(SRC).as_posix()
        if not relative.startswith(tuple(DRIVER_PACKAGES)):
            yield relative, path


def _findings(path: Path) -> list[tuple[int, str]]:
    return sorted(set(branches(ast.parse(path.read_text(encoding="utf-8"), str(path)))))


def test_no_dialect_branch_outside_a_driver_package() -> None:
    found = [
        f"{relative}:{line}: {what}"
        for relative, path in _scanned()
        for line, what in _findings(path)
    ]
    assert not found, (
        "dialect branches outside a driver package (move the SQL into db/'s portable "
        "building blocks, the ledger driver or the engine store):\n" + "\n".join(found)
    )


@pytest.mark.parametrize("package", sorted(DRIVER_PACKAGES))
def test_every_driver_package_is_where_branches_are(package: str) -> None:
    """Each driver package holds dialect branches (the scan sees them there):
    one that no longer does is dropped from DRIVER_PACKAGES."""
    assert any(_findings(path) for path in sorted((SRC / package).rglob("*.py"))), package


@pytest.mark.parametrize(
    "source",
    [
        "if db.is_sqlite:\n    pass",
        "x = 1 if conn.dialect.name == 'postgresql' else 2",
        "kind = dialect_name(conn)",
        "kind = dialects.dialect_name(conn)",
        "driver = DRIVERS[db.dialect]",
        "ok = db.dialect == SQLITE",
        "ok = 'sqlite' != kind",
        "ok = kind in (dialects.POSTGRESQL,)",
        "rows = list_instances(conn, flt, sqlite=True)",
        "def count(conn, *, sqlite=False):\n    pass",
    ],
)
def test_the_scan_sees_each_kind_of_branch(source: str) -> None:
    assert list(branches(ast.parse(source))), source


@pytest.mark.parametrize(
    "source",
    [
        "stmt = upsert(conn, table)",
        "report = {'database': db.dialect}",
        "params = insert_params(rows, conn.dialect)",
        "name = 'postgresql'",
        "cte = q.cte('c').prefix_with('MATERIALIZED', dialect='postgresql')",
    ],
)
def test_the_scan_leaves_dialect_neutral_code_alone(source: str) -> None:
    assert not list(branches(ast.parse(source))), source
