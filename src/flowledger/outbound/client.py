"""The one outbound HTTP client (SPEC X-4, L-16).

Every outbound call goes through :class:`OutboundClient`: an
``httpx.AsyncClient`` that never follows redirects (a 3xx comes back as a
response), never retries at the transport level (``retries=0`` on the
transport and the connection pool), ignores proxy and netrc environment
variables (only ``SSL_CERT_FILE``/``SSL_CERT_DIR`` are honoured), and
applies the connect and read timeouts from the settings.

Pinning — connect to the address that was checked. :meth:`OutboundClient.send`
first runs the SSRF check (:func:`~flowledger.outbound.ssrf.check_target`),
which resolves the host once and yields one vetted address. The request then
runs with that address in a context variable, and the httpcore connection pool
is built on :class:`PinnedBackend`, a network backend whose ``connect_tcp``
ignores the resolver entirely: it connects to the pinned IP, and refuses any
connection whose host/port is not the one just checked. The URL is not
rewritten, so the ``Host`` header, TLS SNI and certificate verification all
still use the original host name. A DNS answer that changes between check and
connect (rebinding) therefore cannot move the connection. Pooled keep-alive
connections are keyed by origin and were each opened to a checked address.

A response body is read up to :data:`RESPONSE_READ_LIMIT` bytes; a longer one
comes back cut, with ``complete=False``.

A client is built from the settings it is given; the runtime's
:class:`~flowledger.outbound.resources.Outbound` owns the one its handlers
use and closes it at shutdown.
"""

from __future__ import annotations

import ssl
import time
from collections.abc import Iterable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import httpcore
import httpx

from flowledger.outbound.ssrf import (
    AllowList,
    CheckedTarget,
    OutboundRefused,
    Resolver,
    check_target,
    parse_target,
)
from flowledger.settings import Settings
from flowledger.telemetry import client_span

RESPONSE_READ_LIMIT = 8 * 1024 * 1024


@dataclass(frozen=True)
class _Pin:
    host: str
    port: int
    address: str


_PIN: ContextVar[_Pin | None] = ContextVar("flowledger_outbound_pin", default=None)


class PinnedBackend(httpcore.AsyncNetworkBackend):
    """Connects only to the address pinned for the current request."""

    def __init__(self, inner: httpcore.AsyncNetworkBackend | None = None) -> None:
        self.inner = inner or httpcore.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109 (httpcore interface)
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        pin = _PIN.get()
        if pin is None or (pin.host, pin.port) != (host, port):
            raise OutboundRefused(f"{host}:{port}", "no checked address for this connection")
        return await self.inner.connect_tcp(
            pin.address,
            port,
            timeout=timeout,
            local_address=local_address,
            socket_options=socket_options,
        )

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,  # noqa: ASYNC109 (httpcore interface)
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        raise OutboundRefused(path, "unix sockets are not outbound targets")

    async def sleep(self, seconds: float) -> None:
        await self.inner.sleep(seconds)


class _PinnedTransport(httpx.AsyncHTTPTransport):
    """httpx's transport (its error mapping and streams) over a connection
    pool that uses :class:`PinnedBackend` and never retries."""

    def __init__(self, backend: PinnedBackend, *, verify: ssl.SSLContext | bool) -> None:
        # trust_env here only admits SSL_CERT_FILE / SSL_CERT_DIR (on-premises CAs)
        ssl_context = httpx.create_ssl_context(verify=verify, trust_env=True)
        super().__init__(verify=ssl_context, trust_env=False, retries=0)
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=ssl_context,
            max_connections=100,
            max_keepalive_connections=20,
            keepalive_expiry=5.0,
            retries=0,
            network_backend=backend,
        )


@dataclass(frozen=True)
class OutboundResponse:
    """A response as received. ``complete`` is False when the body was cut at
    the read limit or its reading failed (``error``) after the status arrived."""

    status: int
    headers: list[tuple[str, str]]
    body: bytes
    duration_ms: int
    complete: bool = True
    error: str | None = None

    def header(self, name: str) -> str | None:
        wanted = name.lower()
        return next((v for k, v in self.headers if k.lower() == wanted), None)


async def _read_body(response: httpx.Response) -> tuple[bytes, bool, str | None]:
    chunks: list[bytes] = []
    size = 0
    try:
        async for chunk in response.aiter_bytes():
            chunks.append(chunk)
            size += len(chunk)
            if size > RESPONSE_READ_LIMIT:
                return b"".join(chunks)[:RESPONSE_READ_LIMIT], False, None
    except (httpx.TransportError, httpx.DecodingError) as exc:
        return b"".join(chunks), False, f"{type(exc).__name__}: {exc}"
    return b"".join(chunks), True, None


class OutboundClient:
    """The outbound HTTP client; see the module docstring."""

    def __init__(
        self,
        settings: Settings,
        *,
        resolver: Resolver | None = None,
        network_backend: httpcore.AsyncNetworkBackend | None = None,
        verify: ssl.SSLContext | bool = True,
    ) -> None:
        self.allow = AllowList.parse(settings.outbound_allow)
        self.max_body_bytes = settings.outbound_max_body_bytes
        self.connect_timeout_s = settings.outbound_connect_timeout_s
        self._resolver = resolver
        read = settings.outbound_read_timeout_s
        self._http = httpx.AsyncClient(
            transport=_PinnedTransport(PinnedBackend(network_backend), verify=verify),
            follow_redirects=False,
            trust_env=False,
            timeout=httpx.Timeout(
                connect=self.connect_timeout_s, read=read, write=read, pool=self.connect_timeout_s
            ),
        )

    @property
    def closed(self) -> bool:
        return self._http.is_closed

    async def aclose(self) -> None:
        await self._http.aclose()

    async def check(self, url: str | httpx.URL) -> CheckedTarget:
        """Parse, resolve and vet ``url``; raises OutboundRefused (or
        ResolutionFailed) without opening any socket to the target."""
        return await check_target(
            parse_target(url),
            self.allow,
            resolver=self._resolver,
            timeout_s=self.connect_timeout_s,
        )

    async def send_checked(
        self,
        checked: CheckedTarget,
        method: str,
        *,
        headers: Mapping[str, str] | None = None,
        content: bytes | None = None,
    ) -> OutboundResponse:
        """Send one request to the checked address. httpx transport errors
        (``httpx.ConnectError`` … ``httpx.ReadTimeout``) propagate."""
        target = checked.target
        token = _PIN.set(_Pin(target.host, target.port, str(checked.address)))
        started = time.monotonic()
        try:
            request = self._http.build_request(method, target.url, headers=headers, content=content)
            with client_span(
                method, str(target.url), target.host, target.port, request.headers
            ) as span:
                response = await self._http.send(request, stream=True)
                span.answered(response.status_code)
                try:
                    body, complete, error = await _read_body(response)
                finally:
                    await response.aclose()
        finally:
            _PIN.reset(token)
        return OutboundResponse(
            status=response.status_code,
            headers=[(k, v) for k, v in response.headers.multi_items()],
            body=body,
            duration_ms=int((time.monotonic() - started) * 1000),
            complete=complete,
            error=error,
        )

    async def send(
        self,
        method: str,
        url: str | httpx.URL,
        *,
        headers: Mapping[str, str] | None = None,
        content: bytes | None = None,
    ) -> OutboundResponse:
        """Check ``url`` and send one request to the checked address."""
        checked = await self.check(url)
        return await self.send_checked(checked, method, headers=headers, content=content)
