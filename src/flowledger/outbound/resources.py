"""The outbound resources of one runtime (:class:`Outbound`), built from its
settings on first use and closed with it: the HTTP client
(:class:`~flowledger.outbound.client.OutboundClient`, SPEC X-4; one per
event loop, since its connection pool belongs to the loop it was opened on)
the secret box that encrypts stored secrets
(:class:`~flowledger.outbound.secrets.SecretBox`, X-3, X-5) and the
connectors' rate limiters and circuit breakers
(:class:`~flowledger.outbound.connector_guards.ConnectorGuards`, X-3; per
event loop too).

Nothing here is process-wide: the runtime
(:func:`flowledger.runtime.build_runtime`) makes one :class:`Outbound` and
passes it to the handlers and the API; a test builds its own from the
settings it wants."""

from __future__ import annotations

import asyncio
from weakref import WeakKeyDictionary

from flowledger.outbound.client import OutboundClient
from flowledger.outbound.connector_guards import ConnectorGuards
from flowledger.outbound.secrets import SecretBox, box_from_settings
from flowledger.settings import Settings


class Outbound:
    """The HTTP client and the secret box of ``settings``, each made on first
    use (a secret key file is created only when a secret is used)."""

    def __init__(
        self,
        settings: Settings,
        *,
        client: OutboundClient | None = None,
        secrets: SecretBox | None = None,
    ) -> None:
        self.settings = settings
        self._given = client
        self._clients: WeakKeyDictionary[asyncio.AbstractEventLoop, OutboundClient] = (
            WeakKeyDictionary()
        )
        self._secrets = secrets
        self._guards: WeakKeyDictionary[asyncio.AbstractEventLoop, ConnectorGuards] = (
            WeakKeyDictionary()
        )

    @property
    def client(self) -> OutboundClient:
        """The client of the running event loop (made on first use)."""
        if self._given is not None:
            return self._given
        loop = asyncio.get_running_loop()
        client = self._clients.get(loop)
        if client is None or client.closed:
            client = self._clients[loop] = OutboundClient(self.settings)
        return client

    @property
    def guards(self) -> ConnectorGuards:
        """The connector guards of the running event loop (made on first use)."""
        loop = asyncio.get_running_loop()
        found = self._guards.get(loop)
        if found is None:
            found = self._guards[loop] = ConnectorGuards()
        return found

    @property
    def secrets(self) -> SecretBox:
        if self._secrets is None:
            self._secrets = box_from_settings(self.settings)
        return self._secrets

    async def aclose(self) -> None:
        """Close the running loop's client (at shutdown); a later use opens
        a new one."""
        client = self._clients.pop(asyncio.get_running_loop(), None)
        if client is not None:
            await client.aclose()
        if self._given is not None:
            await self._given.aclose()
