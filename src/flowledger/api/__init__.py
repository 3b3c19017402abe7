"""The REST API (SPEC A-1..A-4, DESIGN "REST contract"): FastAPI routers
under ``/api/workflows``, one per area; bearer-token auth; permission and
tenant checks; the operation audit; one error mapping. It calls the engine's
facade for every change and :mod:`flowledger.engine.queries` for every read;
it writes only the operation audit itself; every engine row changes through
engine code.

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
