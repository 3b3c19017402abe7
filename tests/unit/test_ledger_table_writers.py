"""Only the ledger driver writes the ledger's four tables (issue 16 item 1,
Done when: "no import of the four ledger tables' writers outside the
driver"; SPEC L-1).

``workflow_jobs``, ``workflow_job_executions``, ``workflow_job_effects`` and
``system_scheduler_nodes`` are written by ``ledger/driver/`` and by the SQL
its fast paths run (``ledger/driver/postgres_sql.py`` through
``db/pg_hotpath.py``, ``ledger/driver/sqlite_sql.py`` through
``db/sqlite_hotpath.py``) and created by the migrations; everyone else —
``ops/`` read models, the engine, compensation — may read them (select,
join) but never insert, update or delete. The scan is over the AST of
``src/flowledger``: a Core ``insert/update/delete/upsert`` of a name bound to
one of the tables, ``table.insert()`` and friends, and raw SQL text that
writes one of them.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "flowledger"
TABLES = frozenset(
    {"workflow_jobs", "workflow_job_executions", "workflow_job_effects", "system_scheduler_nodes"}
)
WRITERS = (
    # the driver, with its statements (postgres_sql.py, run by db/pg_hotpath.py;
    # sqlite_sql.py, run by db/sqlite_hotpath.py)
    "ledger/driver/",
    "db/sqlite_hotpath.py",
)
EXEMPT = ("db/migrations/",)  # the schema's own history
CORE_WRITES = frozenset({"insert", "update", "delete", "upsert"})
RAW_WRITE = re.compile(
    r"\b(?:INSERT\s+INTO|UPDATE|DELETE\s+FROM)\s+(" + "|".join(sorted(TABLES)) + r")\b",
    re.IGNORECASE,
)


def _table_names(tree: ast.AST) -> dict[str, str]:
    """Local name → table for every import of one of the four tables."""
    names: dict[str, str] = {}
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.ImportFrom)
            and node.module
            and node.module.startswith("flowledger")
        ):
            for alias in node.names:
                if alias.name in TABLES:
                    names[alias.asname or alias.name] = alias.name
    return names


def _table_of(node: ast.AST, names: dict[str, str]) -> str | None:
    if isinstance(node, ast.Name):
        return names.get(node.id)
    if isinstance(node, ast.Attribute) and node.attr in TABLES:
        return node.attr  # schema.workflow_jobs
    return None


def writes(text: str) -> list[str]:
    """What ``text`` (one module's source) writes to the four tables."""
    tree = ast.parse(text)
    names = _table_names(tree)
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            verb = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
            if verb in CORE_WRITES and isinstance(func, ast.Name | ast.Attribute):
                for arg in node.args[:2]:  # insert(t) / upsert(conn, t)
                    table = _table_of(arg, names)
                    if table and not (isinstance(func, ast.Attribute) and func.value is arg):
                        found.append(f"{node.lineno}: {verb}({table})")
            if isinstance(func, ast.Attribute) and func.attr in {"insert", "update", "delete"}:
                table = _table_of(func.value, names)
                if table:
                    found.append(f"{node.lineno}: {table}.{func.attr}()")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            for match in RAW_WRITE.finditer(node.value):
                found.append(f"{node.lineno}: SQL {match.group(0)!r}")
    return found


def _relative(path: Path) -> str:
    return path.relative_to(SRC).as_posix()


def test_only_the_driver_writes_the_ledger_tables() -> None:
    outside: dict[str, list[str]] = {}
    for path in sorted(SRC.rglob("*.py")):
        relative = _relative(path)
        if relative.startswith(WRITERS) or relative.startswith(EXEMPT):
            continue
        found = writes(path.read_text(encoding="utf-8"))
        if found:
            outside[relative] = found
    assert not outside, f"writes to the ledger's tables outside the driver: {outside}"


def test_the_driver_is_where_the_writes_are() -> None:
    # the scan sees the writes that exist: each writer module writes at least one table
    seen = {
        relative
        for path in SRC.rglob("*.py")
        if (relative := _relative(path)).startswith(WRITERS)
        and writes(path.read_text(encoding="utf-8"))
    }
    assert {"ledger/driver/postgres_sql.py", "ledger/driver/sqlite_sql.py"} <= seen
    assert any(r.startswith("ledger/driver/") for r in seen)


JOBS = "from flowledger.db.schema import workflow_jobs as jobs\n"


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (JOBS + "update(jobs).values(x=1)", "update(workflow_jobs)"),
        (JOBS + "upsert(conn, jobs)", "upsert(workflow_jobs)"),
        (JOBS + "jobs.delete()", "workflow_jobs.delete()"),
        (
            "from flowledger.db.schema import workflow_job_effects\ninsert(workflow_job_effects)",
            "insert(workflow_job_effects)",
        ),
        (
            "from flowledger.db import schema\ndelete(schema.system_scheduler_nodes)",
            "delete(system_scheduler_nodes)",
        ),
        (
            "text('UPDATE workflow_job_executions SET x = 1')",
            "SQL 'UPDATE workflow_job_executions'",
        ),
    ],
)
def test_the_scan_sees_each_kind_of_write(source: str, expected: str) -> None:
    assert [f.split(": ", 1)[1] for f in writes(source)] == [expected]


def test_the_scan_leaves_reads_alone() -> None:
    source = (
        "from flowledger.db.schema import workflow_jobs as jobs\n"
        "select(jobs.c.id).where(jobs.c.status == 'dead')\n"
        "update(other_table).values(job_id=jobs.c.id)\n"
        "text('SELECT * FROM workflow_jobs')\n"
    )
    assert writes(source) == []
