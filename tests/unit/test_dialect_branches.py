"""No dialect branch outside ``db/`` (issue 16, "Done when", first bullet).

SQL that differs between PostgreSQL and SQLite lives in ``db/``: the
per-dialect constructs of :mod:`flowledger.db.portable`, the aggregates of
:mod:`flowledger.db.aggregates`, the planner settings of
:mod:`flowledger.db.planner` and the upsert of :mod:`flowledger.db.dialects`.
Code above ``db/`` never decides by the database kind. The scan below (the
standard library's :mod:`ast` over ``src/flowledger``, ``db/`` excluded)
reports, as a dialect branch:

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

# Files (relative to src/flowledger) allowed to branch, each with its reason.
ALLOWED: dict[str, str] = {
    # Permanent: the one place the ledger picks its driver (SqliteLedger,
    # PostgresLedger: issue 16 item 1) by the dialect name db/ reports. db/
    # cannot do it (it sits below ledger/), and it is a lookup in a table of
    # drivers, not SQL chosen per dialect.
    "ledger/driver/__init__.py": "the ledger driver's selection by dialect name",
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
        if not relative.startswith("db/"):
            yield relative, path


def _findings(path: Path) -> list[tuple[int, str]]:
    return sorted(set(branches(ast.parse(path.read_text(encoding="utf-8"), str(path)))))


def test_no_dialect_branch_outside_db() -> None:
    found = [
        f"{relative}:{line}: {what}"
        for relative, path in _scanned()
        if relative not in ALLOWED
        for line, what in _findings(path)
    ]
    assert not found, (
        "dialect branches outside db/ (move the SQL into a db/ building block: "
        "flowledger.db.portable, .aggregates, .planner, .dialects):\n" + "\n".join(found)
    )


@pytest.mark.parametrize("relative", sorted(ALLOWED))
def test_every_allowed_file_still_branches(relative: str) -> None:
    """An allowance whose file no longer branches is dropped from ALLOWED."""
    assert _findings(SRC / relative), f"{relative} no longer branches: remove it from ALLOWED"


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
