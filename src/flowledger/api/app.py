"""The FastAPI application: ``create_app(runtime)`` (or ``create_app(db,
engine=...)``, which builds the default runtime over ``db``).

Everything lives under ``/api/workflows``; every route declares who may call
it (:mod:`flowledger.api.route_access`, checked here at start-up); the OpenAPI document is served
at ``/api/openapi.json`` and the interactive docs at ``/api/docs``. Operation
ids are ``{tag}-{name}`` (``instances-cancel_instance``) so a generated
client gets stable method names. Every documented error uses one body
(:class:`~flowledger.api.schemas.ErrorPublic`).
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, FastAPI
from fastapi.routing import APIRoute, iter_route_contexts

from flowledger.api.console import mount_console
from flowledger.api.deps import ApiContext
from flowledger.api.errors import install_error_handlers
from flowledger.api.input_guards import InputGuardMiddleware
from flowledger.api.metrics_endpoint import router as metrics_router
from flowledger.api.route_access import GuardedRoute
from flowledger.api.routers import (
    alerts,
    analytics,
    automation,
    batches,
    callbacks,
    compensation,
    connectors,
    definitions,
    engine_diagnostics,
    instance_monitor,
    instance_ops,
    instance_scope,
    instances,
    job_actions,
    job_pauses,
    jobs,
    live,
    me,
    messages,
    migrations,
    recovery,
    retention,
    schedules,
    subscriptions,
    task_reminders,
    tasks,
    views,
    worker_nodes,
)
from flowledger.api.routers import health as health_routes
from flowledger.api.schemas import ErrorPublic
from flowledger.db.database import Database
from flowledger.engine import Engine
from flowledger.runtime import Runtime, build_runtime
from flowledger.telemetry import fastapi_config

API_PREFIX = "/api/workflows"

_ERRORS: dict[int | str, dict[str, Any]] = {
    401: {"model": ErrorPublic, "description": "Missing or invalid bearer token"},
    403: {"model": ErrorPublic, "description": "A permission is missing"},
    404: {"model": ErrorPublic, "description": "Not found (or in a tenant you cannot see)"},
    409: {"model": ErrorPublic, "description": "Conflicts with the object's state"},
    413: {"model": ErrorPublic, "description": "The body is over the size cap (docs/limits.md)"},
    422: {"model": ErrorPublic, "description": "Invalid input; `field` names it"},
}


def operation_id(route: APIRoute) -> str:
    return f"{route.tags[0]}-{route.name}"


def api_router() -> APIRouter:
    router = APIRouter(prefix=API_PREFIX, responses=_ERRORS)
    for module in (
        migrations,  # before definitions: /definitions/{key}/versions/running is not a version
        definitions,
        instance_monitor,  # before instances: /instances/counts is not an id
        instances,
        tasks,
        schedules,
        me,
        messages,
        job_actions,
        jobs,
        connectors,
        subscriptions,
        automation,
        callbacks,
        compensation,
        engine_diagnostics,
        recovery,
        batches,
        instance_ops,
        instance_scope,
        job_pauses,
        health_routes,
        analytics,
        retention,
        worker_nodes,
        task_reminders,
        views,
        live,  # the live console's event stream (issue 33 item 2)
    ):
        router.include_router(module.router)
    router.include_router(alerts.router)  # SPEC O-22
    return router


def create_app(source: Runtime | Database, *, engine: Engine | None = None) -> FastAPI:
    """The API of ``source``: a :class:`~flowledger.runtime.Runtime`, or a
    database (the default runtime over it is built, with ``engine`` if one
    is given — its hooks are then the API's)."""
    runtime = source if isinstance(source, Runtime) else build_runtime(db=source, engine=engine)
    app = FastAPI(
        title="flowledger",
        summary="Approval workflows on a durable job ledger",
        version="0.1.0",
        openapi_url="/api/openapi.json",
        docs_url="/api/docs",
        redoc_url=None,
        generate_unique_id_function=operation_id,
        # server spans per request, continuing a caller's traceparent (issue 33)
        telemetry=fastapi_config(),
    )
    app.state.api = ApiContext(
        db=runtime.db,
        engine=runtime.engine,
        runtime_settings=runtime.settings,
        outbound=runtime.outbound,
        login_codes=runtime.login_codes,
        job_types=runtime.job_types,
        replica=runtime.replica,
    )
    app.add_middleware(  # issue 17: the caps of the app's settings at each request
        InputGuardMiddleware,
        paths=lambda: app.openapi()["paths"],
        settings=lambda: app.state.api.settings,
    )
    install_error_handlers(app)
    app.include_router(api_router())
    app.include_router(metrics_router)  # GET /metrics at the root (SPEC O-22)
    mount_console(app, responses=_ERRORS)  # the web console at / (SPA fallback; never shadows /api)
    check_declared(app)
    return app


def check_declared(app: FastAPI) -> None:
    """Refuse to start with a route that does not declare who may call it
    (SPEC A-2, :mod:`flowledger.api.route_access`): every API route is a
    :class:`~flowledger.api.route_access.GuardedRoute`, which itself holds
    exactly one declaration."""
    for context in iter_route_contexts(app.routes):
        route = context.original_route
        if isinstance(route, APIRoute) and not isinstance(route, GuardedRoute):
            raise TypeError(f"route {context.path} ({route.name}) is not a GuardedRoute")
