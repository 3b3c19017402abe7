"""Running the HTTP API (uvicorn) inside our own event loop, next to a
worker when asked, with one stop event for both (SIGTERM / SIGINT)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator

import uvicorn

from flowledger.access.login_codes import LoginCodes
from flowledger.api.app import create_app
from flowledger.api.console_login import login_url
from flowledger.errors import ConfigurationError
from flowledger.runtime import Runtime


class _Server(uvicorn.Server):
    """uvicorn without its own signal handlers: the CLI owns shutdown."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


async def serve_api(runtime: Runtime, *, host: str, port: int, stop: asyncio.Event) -> None:
    config = uvicorn.Config(
        create_app(runtime), host=host, port=port, log_level="warning", lifespan="off"
    )
    server = _Server(config)

    async def _serve() -> None:
        try:
            await server.serve()
        except SystemExit as exc:  # uvicorn exits when it cannot bind
            raise ConfigurationError(f"cannot serve on {host}:{port}", field="--port") from exc
        finally:
            stop.set()  # the API is gone: stop the rest of the process too

    serving = asyncio.ensure_future(_serve())
    stop_wait = asyncio.ensure_future(stop.wait())
    await asyncio.wait({serving, stop_wait}, return_when=asyncio.FIRST_COMPLETED)
    server.should_exit = True
    runtime.db.changes.close()  # open event streams end: shutdown does not wait on them
    stop_wait.cancel()
    await serving


def console_login_url(host: str, port: int, user_id: str, codes: LoginCodes) -> str:
    """The one-time URL that opens the web console signed in as ``user_id``
    (served by this process: the code lives in ``codes``, the runtime's)."""
    shown = "127.0.0.1" if host in ("0.0.0.0", "::", "") else host
    return login_url(f"http://{shown}:{port}", user_id, codes)
