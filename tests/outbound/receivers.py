"""A real HTTP receiver for the outbound tests: a raw ``asyncio.start_server``
on 127.0.0.1 speaking just enough HTTP/1.1 (one request per connection).

``reply`` says what it does with each request it reads (``routes`` can name
a different reply per request path):

- an ``int`` status (200, 400, 404, 408, 429, 500, 502 …) with a small JSON body;
- ``Redirect(location, status=302)``;
- ``HANG`` — read the request, never answer (until the receiver closes);
- ``RESET`` — read the request, then reset the connection (SO_LINGER 0).

Every request read is recorded (method, path, lower-cased headers, body) in
``requests`` *before* the reply, so a test can count exactly what arrived.
"""

from __future__ import annotations

import asyncio
import json
import socket
import struct
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from http import HTTPStatus

HANG = "hang"
RESET = "reset"


@dataclass(frozen=True)
class Redirect:
    location: str
    status: int = 302


Reply = int | str | Redirect


@dataclass
class Received:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Receiver:
    reply: Reply = 200
    body: bytes = b'{"ok": true}'
    routes: dict[str, Reply] = field(default_factory=dict)
    requests: list[Received] = field(default_factory=list)
    port: int = 0
    _server: asyncio.Server | None = None
    _closing: asyncio.Event = field(default_factory=asyncio.Event)
    _writers: set[asyncio.StreamWriter] = field(default_factory=set)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def endpoint(self) -> str:
        return f"127.0.0.1:{self.port}"

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def close(self) -> None:
        self._closing.set()
        assert self._server is not None
        self._server.close()
        for writer in list(self._writers):
            writer.transport.abort()
        await self._server.wait_closed()

    async def _read(self, reader: asyncio.StreamReader) -> Received | None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except (asyncio.IncompleteReadError, ConnectionError):
            return None
        lines = head.decode("latin-1").split("\r\n")
        method, path, _ = lines[0].split(" ", 2)
        headers: dict[str, str] = {}
        for line in lines[1:]:
            if line:
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
        body = await reader.readexactly(int(headers.get("content-length", "0")))
        return Received(method, path, headers, body)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.add(writer)
        try:
            received = await self._read(reader)
            if received is None:
                return
            self.requests.append(received)
            await self._answer(writer, self.routes.get(received.path, self.reply))
        finally:
            self._writers.discard(writer)
            if self._closing.is_set():
                writer.transport.abort()
            else:
                writer.close()

    async def _answer(self, writer: asyncio.StreamWriter, reply: Reply) -> None:
        if reply == HANG:
            await self._closing.wait()
            return
        if reply == RESET:
            sock = writer.get_extra_info("socket")
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            writer.transport.abort()
            return
        extra = ""
        body = self.body
        if isinstance(reply, Redirect):
            status, extra = reply.status, f"Location: {reply.location}\r\n"
            body = b""
        else:
            assert isinstance(reply, int)
            status = reply
            if status >= 300:
                body = json.dumps({"error": HTTPStatus(status).phrase}).encode()
        if status == 429:
            extra += "Retry-After: 7\r\n"
        head = (
            f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
            f"Set-Cookie: session=receiver-secret\r\nConnection: close\r\n{extra}\r\n"
        )
        writer.write(head.encode("latin-1") + body)
        await writer.drain()


@asynccontextmanager
async def receiving(reply: Reply = 200, body: bytes = b'{"ok": true}') -> AsyncIterator[Receiver]:
    receiver = Receiver(reply=reply, body=body)
    await receiver.start()
    try:
        yield receiver
    finally:
        await receiver.close()
