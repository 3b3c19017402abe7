"""Serving the built web console (``web/dist``) from flowledger itself, same
origin as the API.

:func:`mount_console` adds the login endpoints (:mod:`console_login`) and
makes the console the application's *fallback*: it is installed as the
router's ``default`` handler, which Starlette calls only when no route
matched, so it can never shadow ``/api/*``, ``/metrics`` or any route added
later. GET/HEAD of a file under the build serves it (``/assets/*`` are
content-hashed by Vite: ``Cache-Control: public, max-age=31536000,
immutable``); any other GET that looks like a client route gets
``index.html`` (``no-cache``, so a new build is picked up at once). Paths
under ``/api/`` and ``/metrics`` keep the API's JSON 404.

The build directory is ``FLOWLEDGER_CONSOLE_DIR`` or ``web/dist`` of the
source checkout. Without a build, ``/`` answers 404 ``console_not_built``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from fastapi import FastAPI
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from flowledger.api import console_login

IMMUTABLE = "public, max-age=31536000, immutable"
NO_CACHE = "no-cache"
_API_PREFIXES = ("/api/", "/metrics")


def console_dir() -> Path:
    configured = os.environ.get("FLOWLEDGER_CONSOLE_DIR")
    if configured:
        return Path(configured)
    return Path(__file__).resolve().parents[3] / "web" / "dist"


class ConsoleFallback:
    """The ASGI handler for requests no route matched."""

    def __init__(self, not_found: ASGIApp, root: Path) -> None:
        self.not_found = not_found
        self.root = root

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path: str = scope.get("path", "/")
        if (
            scope["type"] != "http"
            or scope["method"] not in ("GET", "HEAD")
            or path == "/api"
            or path.startswith(_API_PREFIXES)
        ):
            await self.not_found(scope, receive, send)
            return
        response = self._respond(path, Request(scope))
        await response(scope, receive, send)

    def _respond(self, path: str, request: Request) -> Response:
        root = self.root.resolve()
        index = root / "index.html"
        if not index.is_file():
            return JSONResponse(
                {
                    "code": "console_not_built",
                    "message": "the web console is not built (make run builds it)",
                    "field": None,
                },
                status_code=404,
            )
        candidate = (root / path.lstrip("/")).resolve()
        if candidate != root and candidate.is_relative_to(root) and candidate.is_file():
            cache = IMMUTABLE if candidate.parent == root / "assets" else NO_CACHE
            return FileResponse(candidate, headers={"Cache-Control": cache})
        if path.startswith("/assets/"):  # a stale hashed asset: never index.html
            return JSONResponse(
                {"code": "not_found", "message": "no such asset", "field": None},
                status_code=404,
            )
        return FileResponse(index, headers={"Cache-Control": NO_CACHE})


def mount_console(
    app: FastAPI,
    root: Path | None = None,
    *,
    responses: dict[int | str, dict[str, Any]] | None = None,
) -> None:
    """Add the console's login endpoints (documenting ``responses``, the
    API's shared error answers) and its static fallback to ``app``."""
    app.include_router(console_login.router, responses=responses)
    app.router.default = ConsoleFallback(app.router.default, root or console_dir())
