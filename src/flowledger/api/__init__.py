"""The REST API (SPEC A-1..A-4, DESIGN "REST contract"): FastAPI routers
under ``/api/workflows``, one per area; bearer-token auth; permission and
tenant checks; the operation audit; one error mapping. It calls the engine's
facade for every change and :mod:`flowledger.engine.queries` for every read;
it writes only the operation audit itself; every engine row changes through
engine code."""

from flowledger.api.app import create_app

__all__ = ["create_app"]
