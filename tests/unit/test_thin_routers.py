"""Routers are thin (issue 29 item 2): a route parses, authorizes, calls one
service function and maps the answer; the service owns its transaction and
its audit row (:func:`flowledger.access.audit.audited_change`).

The routers' source is read here, in a test (the product never reads source
at run time): no router opens a writing transaction or a connection
(``.begin(`` / ``.connect(``), and no router writes the operation audit
itself (imports :mod:`flowledger.api.audit` or :mod:`flowledger.access.audit`)
but the known exceptions below (none left), counted per router, each still
wrapping a call that commits on its own in ``audited``. An ``audited`` block that hands
its entry to the service (the engine's facade takes ``audit=``, and writes
the row in the action's own transaction) is the service writing its row,
and is not counted. The checks are shown to find what they forbid.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROUTERS = Path(__file__).resolve().parents[2] / "src" / "flowledger" / "api" / "routers"
AUDIT_MODULES = frozenset({"flowledger.api.audit", "flowledger.access.audit"})
OPENS = frozenset({"begin", "connect"})

# Routes that still write their audit rows through ``audited`` (or
# ``write_audit``) around a call that commits on its own, per router, the
# number of such calls: none since every service a route calls takes the
# route's entry and writes its row in the change's own transaction (the
# engine's actions, the form correction, the saved views, the compensation
# note; issue 29 item 2). Refused permissions write their ``failed`` rows in
# api/route_access.py, which is not a router.
AUDITING_ROUTES: dict[str, int] = {}
AUDIT_CALLS = frozenset({"audited", "write_audit"})


def _routers() -> list[Path]:
    return sorted(p for p in ROUTERS.glob("*.py") if p.name != "__init__.py")


def transactions_opened(source: str) -> list[str]:
    """``line: call`` for every ``<x>.begin(…)`` / ``<x>.connect(…)``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in OPENS
        ):
            found.append(f"{node.lineno}: {ast.unparse(node.func)}()")
    return found


def writes_audit(source: str) -> bool:
    """Whether the module imports the operation audit."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module is not None:
            names = {f"{node.module}.{alias.name}" for alias in node.names} | {node.module}
            if names & AUDIT_MODULES:
                return True
        if isinstance(node, ast.Import) and any(a.name in AUDIT_MODULES for a in node.names):
            return True
    return False


def _called(node: ast.Call) -> str | None:
    func = node.func
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)


def _handed_over(block: ast.AsyncWith | ast.With) -> set[int]:
    """The ``audited(…)`` calls of ``block`` whose entry (the ``as`` name)
    the block passes to a call: a service that writes the row itself."""
    handed: set[int] = set()
    passed = {
        arg.id
        for node in ast.walk(ast.Module(body=block.body, type_ignores=[]))
        if isinstance(node, ast.Call)
        for arg in [*node.args, *(k.value for k in node.keywords)]
        if isinstance(arg, ast.Name)
    }
    for item in block.items:
        call, name = item.context_expr, item.optional_vars
        if isinstance(call, ast.Call) and isinstance(name, ast.Name) and name.id in passed:
            handed.add(id(call))
    return handed


def audit_calls(source: str) -> int:
    """How many calls of ``audited`` / ``write_audit`` the module makes,
    less the ``audited`` blocks that hand their entry to a service."""
    tree = ast.parse(source)
    handed: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.AsyncWith | ast.With):
            handed |= _handed_over(node)
    return sum(
        1
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and _called(node) in AUDIT_CALLS and id(node) not in handed
    )


@pytest.mark.parametrize("router", _routers(), ids=lambda p: p.name)
def test_no_router_opens_a_transaction_item2(router: Path) -> None:
    assert transactions_opened(router.read_text(encoding="utf-8")) == [], (
        f"{router.name} opens a transaction; move it into the service it calls"
    )


def test_only_the_known_routes_write_the_audit_item2() -> None:
    counts = {
        p.name: audit_calls(p.read_text(encoding="utf-8"))
        for p in _routers()
        if writes_audit(p.read_text(encoding="utf-8"))
    }
    auditing = {name: n for name, n in counts.items() if n}
    assert auditing == AUDITING_ROUTES, "update AUDITING_ROUTES (the count is the point)"


def test_the_checks_find_what_they_forbid_item2() -> None:
    opening = (
        "async def route(ctx):\n"
        "    async with ctx.db.begin() as conn:\n"
        "        pass\n"
        "    async with ctx.db.engine.connect() as conn:\n"
        "        pass\n"
    )
    assert transactions_opened(opening) == ["2: ctx.db.begin()", "4: ctx.db.engine.connect()"]
    assert transactions_opened("async def route(ctx):\n    await service(ctx)\n") == []
    assert writes_audit("from flowledger.api.audit import audited\n")
    assert writes_audit("from flowledger.access.audit import AuditEntry\n")
    assert writes_audit("from flowledger.api import audit\n")
    assert writes_audit("import flowledger.access.audit\n")
    assert not writes_audit("from flowledger.api.route_access import Audit\n")
    calls = "async def r(ctx):\n    async with audited(ctx):\n        await audit.write_audit(x)\n"
    assert audit_calls(calls) == 2
    assert audit_calls("async def r(ctx):\n    await run_audited(ctx)\n") == 0
    handed = "async def r(ctx):\n    async with audited(ctx) as e:\n        await s(audit=e)\n"
    assert audit_calls(handed) == 0
    kept = "async def r(ctx):\n    async with audited(ctx) as e:\n        await s(x=1)\n"
    assert audit_calls(kept) == 1
