"""The REST API (SPEC A-1..A-4, DESIGN "REST contract"): FastAPI routers
under ``/api/workflows``, one per area (:mod:`flowledger.api.routers`);
bearer-token auth (:mod:`flowledger.api.auth`); every route's permission
declared on the route and checked before its body is read
(:mod:`flowledger.api.route_access`), tenant scope applied where each object
is loaded; the operation audit (:mod:`flowledger.api.audit`); one error
mapping (:mod:`flowledger.api.errors`); the edge's input caps
(:mod:`flowledger.api.input_guards`).

A route parses its input, authorizes, calls the service of its area and
maps the answer: the engine's facade and :mod:`flowledger.engine.queries` for
instances and tasks, ``ops/`` for the operator's read models and actions,
``compensation/`` and ``events/`` for theirs. No router opens a writing
transaction: a service that changes rows owns its transaction and writes its
operation-audit row in it (:func:`flowledger.access.audit.audited_change`).
Routes around a call that commits on its own (mostly the engine's facade)
still wrap it in :func:`flowledger.access.audit.audited`, listed by
the test tests/unit/test_thin_routers.py; reads open read-only transactions
(``ctx.db.read()``) around their query functions.

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
