"""Stand-ins below the HTTP layer: a network backend that records the address
it is asked to connect to and answers from memory (no socket at all), and a
resolver driven by a table."""

from __future__ import annotations

import ssl
from collections.abc import Iterable, Sequence
from typing import Any

import httpcore

CANNED_200 = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"


class FakeStream(httpcore.AsyncNetworkStream):
    def __init__(self, backend: RecordingBackend) -> None:
        self.backend = backend
        self.chunks = [backend.answer]

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:  # noqa: ASYNC109
        return self.chunks.pop(0) if self.chunks else b""

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:  # noqa: ASYNC109
        self.backend.written += buffer

    async def aclose(self) -> None:
        pass

    async def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,  # noqa: ASYNC109
    ) -> httpcore.AsyncNetworkStream:
        self.backend.tls_server_names.append(server_hostname)
        return self

    def get_extra_info(self, info: str) -> Any:
        return None


class RecordingBackend(httpcore.AsyncNetworkBackend):
    """Records every ``connect_tcp``; answers ``answer`` (or fails if
    ``fail`` is set). Nothing leaves the process."""

    def __init__(self, answer: bytes = CANNED_200, *, fail: bool = False) -> None:
        self.answer = answer
        self.fail = fail
        self.connects: list[tuple[str, int]] = []
        self.written = b""
        self.tls_server_names: list[str | None] = []

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        self.connects.append((host, port))
        if self.fail:
            raise httpcore.ConnectError(f"refused by the test backend: {host}:{port}")
        return FakeStream(self)

    async def sleep(self, seconds: float) -> None:
        pass


class TableResolver:
    """Answers from ``table``; any other name fails the test."""

    def __init__(self, table: dict[str, Sequence[str]]) -> None:
        self.table = table
        self.calls: list[str] = []

    async def __call__(self, host: str, port: int) -> Sequence[str]:
        self.calls.append(host)
        if host not in self.table:
            raise AssertionError(f"unexpected DNS lookup of {host!r}")
        return self.table[host]
