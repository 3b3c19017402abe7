"""``GET /metrics`` at the application root (SPEC O-22): the Prometheus
text exposition of :mod:`flowledger.ops.alerts.prometheus`, derived from the
database at scrape time (multi-process correct without prometheus-client's
multiprocess mode). When ``FLOWLEDGER_METRICS_TOKEN`` is set, a scrape must
send ``Authorization: Bearer <token>`` (401 otherwise); it is not an API
user token, so a Prometheus server needs no user account. Figures are taken
at the database's time, as the runtime status panel's (SPEC L-23). It is not part of
the REST API's OpenAPI document (which covers ``/api/workflows`` only)."""

from __future__ import annotations

import hmac

from fastapi import APIRouter, Request, Response
from prometheus_client import CONTENT_TYPE_LATEST

from flowledger.api.deps import ApiContext, Ctx
from flowledger.api.errors import Unauthenticated
from flowledger.api.route_access import GuardedRoute, public
from flowledger.ops.alerts.prometheus import exposition

router = APIRouter(tags=["metrics"], route_class=GuardedRoute)


def _check_token(request: Request, ctx: ApiContext) -> None:
    expected = ctx.settings.metrics_token
    if not expected:
        return
    given = request.headers.get("authorization", "")
    scheme, _, token = given.partition(" ")
    if scheme.lower() != "bearer" or not hmac.compare_digest(token.strip(), expected):
        raise Unauthenticated("GET /metrics needs the metrics bearer token")


@router.get(
    "/metrics",
    response_class=Response,
    include_in_schema=False,
    dependencies=[public("FLOWLEDGER_METRICS_TOKEN, when set, checked by the route")],
)
async def metrics(request: Request, ctx: Ctx) -> Response:
    """Prometheus metrics: the alert gauges, ledger counters and histograms,
    live workers and slots (see docs/alerting.md)."""
    _check_token(request, ctx)
    body = await exposition(ctx.db, now=await ctx.db.now())
    return Response(content=body, media_type=CONTENT_TYPE_LATEST)
