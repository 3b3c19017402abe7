"""The REST API (SPEC A-1..A-4, DESIGN "REST contract"): FastAPI routers
under ``/api/workflows``, one per area (:mod:`flowledger.api.routers`);
bearer-token auth (:mod:`flowledger.api.auth`); every route's permission
declared on the route and checked before its body is read
(:mod:`flowledger.api.route_access`), tenant scope applied where each object
is loaded; the operation audit (:mod:`flowledger.api.audit`); one error
mapping (:mod:`flowledger.api.errors`); the edge's input caps
(:mod:`flowledger.api.input_guards`).

A route parses its input, authorizes and calls the service of its area: the
engine's facade and :mod:`flowledger.engine.queries` for instances and tasks,
``ops/`` for the operator's read models and actions, ``compensation/`` and
``events/`` for theirs. Every engine row changes through engine code; the
API writes the operation audit itself, and the routers of connectors,
subscriptions, automation rules, alert rules, messages and retention
policies still open their own transactions around their store's calls
(issue 29 item 2 moves those into services).

``create_app`` is imported on first use, so a command-line process that needs
one small module of this package (a schema, the audit) does not pay for
building every router."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from flowledger.api.app import create_app

__all__ = ["create_app"]


def __getattr__(name: str) -> Any:
    if name == "create_app":
        from flowledger.api.app import create_app

        return create_app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
