"""The real servers the notification tests talk to: an aiosmtpd handler
that collects envelopes (refusing the sender or some recipients on request,
and, after the whole message arrived, answering a chosen reply, dropping the
connection or stalling instead of accepting it) and a minimal
HTTP/1.1 SMS gateway (``asyncio.start_server``, one request per
connection) that checks the bearer token and the JSON body."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any


@dataclass
class Collector:
    """aiosmtpd handler: ``refuse`` maps a recipient to the reply its RCPT
    gets, ``refuse_sender`` is the reply every MAIL gets. After the end of the
    message (``data_attempts`` counts them): ``data_reply`` answers instead of
    250 (e.g. ``451``), ``drop_after_data`` drops the connection without an
    answer, ``stall_after_data_s`` waits that long before answering 250."""

    port: int = 0
    envelopes: list[Any] = field(default_factory=list)
    refuse: dict[str, str] = field(default_factory=dict)
    refuse_sender: str | None = None
    data_reply: str | None = None
    drop_after_data: bool = False
    stall_after_data_s: float = 0.0
    data_attempts: int = 0

    async def handle_MAIL(
        self, server: Any, session: Any, envelope: Any, address: str, mail_options: list[str]
    ) -> str:
        if self.refuse_sender is not None:
            return self.refuse_sender
        envelope.mail_from = address
        envelope.mail_options.extend(mail_options)
        return "250 OK"

    async def handle_RCPT(
        self, server: Any, session: Any, envelope: Any, address: str, rcpt_options: list[str]
    ) -> str:
        if address in self.refuse:
            return self.refuse[address]
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        self.data_attempts += 1
        if self.drop_after_data:
            server.transport.abort()
            return "250 never seen"
        if self.data_reply is not None:
            return self.data_reply
        await asyncio.sleep(self.stall_after_data_s)
        self.envelopes.append(envelope)
        return "250 Message accepted for delivery"


@dataclass
class SmsGatewayServer:
    """Answers ``status`` (200 → {"id": "m-1"}); a wrong token is 401, a
    body that is not the expected JSON shape is 422."""

    token: str
    status: int = 200
    delay_s: float = 0.0
    requests: list[dict[str, Any]] = field(default_factory=list)
    port: int = 0
    _server: asyncio.Server | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/sms/send"

    @property
    def endpoint(self) -> str:
        return f"127.0.0.1:{self.port}"

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def close(self) -> None:
        assert self._server is not None
        self._server.close()
        await self._server.wait_closed()

    def _status_for(self, headers: dict[str, str], body: Any) -> int:
        if headers.get("authorization") != f"Bearer {self.token}":
            return 401
        if headers.get("content-type") != "application/json" or not (
            isinstance(body, dict)
            and set(body) == {"templateId", "recipients", "fieldValues"}
            and isinstance(body["recipients"], list)
            and isinstance(body["fieldValues"], dict)
        ):
            return 422
        return self.status

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
            headers = {
                k.strip().lower(): v.strip()
                for k, _, v in (line.partition(":") for line in head[1:] if line)
            }
            raw = await reader.readexactly(int(headers.get("content-length", "0")))
            try:
                body = json.loads(raw)
            except ValueError:
                body = None
            self.requests.append({"line": head[0], "headers": headers, "json": body})
            status = self._status_for(headers, body)
            await asyncio.sleep(self.delay_s)
            payload = json.dumps({"id": "m-1"} if status == 200 else {"error": status}).encode()
            writer.write(
                f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\n"
                f"Content-Type: application/json\r\nContent-Length: {len(payload)}\r\n"
                "Connection: close\r\n\r\n".encode("latin-1")
                + payload
            )
            await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()
