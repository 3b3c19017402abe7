"""Authorization before validation (issue 17 item 10, SPEC A-2): a caller
who lacks a mutation's permission gets 403 even when the body is invalid.

FastAPI validates a route's body before the route's own code runs, and the
routes check their coarse permission in code (``require(caller, X)``,
``require_any(caller, X, Y)``, ``require_own(caller, owner, X)`` as their first
check). Rather than restating every route's permission in a second place,
:func:`coarse_permissions` reads the first such call of the endpoint's source
once (cached per endpoint): ``require`` gives ``(X,)``, ``require_any`` its
permissions, ``require_own`` ``(X, workflow:engine:operate)``. The validation
handler of :mod:`flowledger.api.errors` asks :func:`refuse_unauthorized`
before answering 422: an authenticated caller holding none of them gets the
403 the route would have given. An endpoint whose first check sits in a
helper is left as it is (no guess). Nothing here reads the database.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from collections.abc import Callable
from functools import cache
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse

from flowledger.api.errors import Forbidden, flowledger_response

ENGINE_OPERATE = "workflow:engine:operate"
TASK_ACT = "workflow:task:act"
MUTATIONS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
_CHECKS = frozenset({"require", "require_any", "require_own"})


def _resolve(node: ast.expr, scope: dict[str, Any]) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name) and isinstance(scope.get(node.id), str):
        return str(scope[node.id])
    return None


@cache
def coarse_permissions(endpoint: Callable[..., Any]) -> tuple[str, ...] | None:
    """The permissions of the endpoint's first ``require*`` call (any of them
    allows it past the coarse check), or None when it has none to read."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(endpoint)))
    except (OSError, TypeError, SyntaxError):
        return None
    calls = sorted(
        (
            node
            for node in ast.walk(tree)
            if isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in _CHECKS
        ),
        key=lambda node: (node.lineno, node.col_offset),
    )
    if not calls:
        return None
    call, scope = calls[0], getattr(endpoint, "__globals__", {})
    assert isinstance(call.func, ast.Name)
    if call.func.id == "require_own":
        named = [k.value for k in call.keywords if k.arg == "permission"]
        given = call.args[2] if len(call.args) > 2 else (named[0] if named else None)
        own = _resolve(given, scope) if given is not None else TASK_ACT
        return (own, ENGINE_OPERATE) if own else None
    args = call.args[1:] if call.func.id == "require_any" else call.args[1:2]
    permissions = tuple(p for p in (_resolve(a, scope) for a in args) if p)
    return permissions if permissions and len(permissions) == len(args) else None


def refuse_unauthorized(request: Request) -> JSONResponse | None:
    """403 for an authenticated caller without the route's coarse permission."""
    if request.method not in MUTATIONS:
        return None
    caller = getattr(request.state, "caller", None)
    endpoint = request.scope.get("endpoint")
    if caller is None or endpoint is None:
        return None
    permissions = coarse_permissions(endpoint)
    if not permissions or any(caller.has(p) for p in permissions):
        return None
    return flowledger_response(
        Forbidden(
            f"this needs one of the permissions {', '.join(permissions)}",
            permission=permissions[0],
        )
    )
