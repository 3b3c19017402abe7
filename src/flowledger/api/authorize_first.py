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
403 the route would have given. A first check inside a module-level helper
the endpoint calls by name (the task actions' ``_act``) is read the same way,
up to two helpers deep; an endpoint with no readable check is left as it is
(no guess). Nothing here reads the database.
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
_HELPER_DEPTH = 2


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
    return _first_check(endpoint, _HELPER_DEPTH)


def _helper(node: ast.Call, scope: dict[str, Any]) -> Callable[..., Any] | None:
    """The module-level flowledger function ``node`` calls by name, if any."""
    if not isinstance(node.func, ast.Name) or node.func.id in _CHECKS:
        return None
    target = scope.get(node.func.id)
    target = inspect.unwrap(target) if callable(target) else None
    if inspect.isfunction(target) and target.__module__.startswith("flowledger."):
        return target
    return None


def _first_check(endpoint: Callable[..., Any], depth: int) -> tuple[str, ...] | None:
    """The first ``require*`` call in the source order of ``endpoint``; a call
    of a helper (``_act(...)`` of the task actions) counts as its own first
    check when it has one, ``depth`` helpers deep."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(endpoint)))
    except (OSError, TypeError, SyntaxError):
        return None
    scope = getattr(endpoint, "__globals__", {})
    calls = sorted(
        (
            node
            for node in ast.walk(tree)
            if isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and (node.func.id in _CHECKS or (depth > 0 and _helper(node, scope) is not None))
        ),
        key=lambda node: (node.lineno, node.col_offset),
    )
    for call in calls:
        helper = _helper(call, scope)
        if helper is None:
            return _permissions(call, scope)
        found = _first_check(helper, depth - 1)
        if found is not None:
            return found
    return None


def _permissions(call: ast.Call, scope: dict[str, Any]) -> tuple[str, ...] | None:
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
