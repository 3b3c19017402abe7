"""The SSRF guard (SPEC X-4): which URLs and addresses an outbound call may reach.

:func:`parse_target` parses a URL with the same parser the client sends it
with (httpx), so check and use cannot disagree; it admits http/https only and
refuses user info (``http://evil@127.0.0.1``). :func:`check_target` resolves
the host — IP literals and the legacy numeric spellings ``inet_aton`` accepts
(``127.1``, ``0x7f.1``, ``0177.0.0.1``, ``2130706433``) are taken as the
address they denote, names go through :func:`resolve_host` — and refuses when
ANY address is not a public unicast one (see :func:`classify`), unless the
operator allow-list admits it. The result names the one address the client
must connect to. Refusals are :class:`OutboundRefused`, raised before any
socket is opened.

Allow-list (``FLOWLEDGER_OUTBOUND_ALLOW``): comma-separated CIDRs
(``10.20.0.0/16``, a bare IP means a single address) admitting those addresses
on any port, and ``host:port`` entries (``127.0.0.1:8123``, ``[::1]:8443``,
``erp.internal:443``) admitting that address — or every address of that name —
on that port only. Cloud-metadata addresses are admitted only by an exact
``host:port`` entry, never by a CIDR; unspecified, multicast and broadcast
addresses never.
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
import socket
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx

from flowledger.definitions.templates import render
from flowledger.errors import ConfigurationError, PermanentError, RetryableError
from flowledger.outbound.addresses import (
    LINK_LOCAL,
    LOOPBACK,
    METADATA,
    NEVER_ADMITTED,
    Address,
    Network,
    classify,
    literal_address,
)
from flowledger.outbound.records import Recorded

Resolver = Callable[[str, int], Awaitable[Sequence[str]]]

DEFAULT_PORTS = {"http": 80, "https": 443}
_USERINFO = re.compile(r"(//)[^/?#@]*@")
_ORIGIN = re.compile(r"\s*[A-Za-z][A-Za-z0-9+.-]*://[^/?#]*")


class OutboundRefused(Recorded, PermanentError):
    """An outbound call refused by policy before any socket was opened."""

    code = "outbound_refused"

    def __init__(self, target: str, reason: str) -> None:
        super().__init__(
            f"outbound call to {target} refused: {reason}", target=target, reason=reason
        )
        self.target = target
        self.reason = reason


class ResolutionFailed(Recorded, RetryableError):
    """The host name could not be resolved; nothing was sent."""

    code = "outbound_dns_failed"


@dataclass(frozen=True)
class Target:
    """A parsed outbound URL. ``host`` is what the connection layer will be
    asked to connect to (IDNA-encoded, IPv6 without brackets)."""

    url: httpx.URL
    host: str
    port: int

    @property
    def origin(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.url.scheme}://{host}:{self.port}"


@dataclass(frozen=True)
class CheckedTarget:
    """A target that passed the policy, with the address to connect to."""

    target: Target
    address: Address
    addresses: tuple[Address, ...]


@dataclass(frozen=True)
class AllowList:
    """The operator allow-list (see the module docstring)."""

    networks: tuple[Network, ...] = ()
    endpoints: frozenset[tuple[str, int]] = frozenset()

    @classmethod
    def parse(cls, text: str) -> AllowList:
        networks: list[Network] = []
        endpoints: set[tuple[str, int]] = set()
        for raw in text.split(","):
            entry = raw.strip()
            if not entry:
                continue
            try:
                if "/" in entry or literal_address(entry.strip("[]")) is not None:
                    networks.append(ipaddress.ip_network(entry.strip("[]"), strict=False))
                    continue
                host, _, port_text = entry.rpartition(":")
                port = int(port_text)
                if not host or not 0 < port < 65536:
                    raise ValueError(entry)
            except ValueError:
                raise ConfigurationError(
                    f"FLOWLEDGER_OUTBOUND_ALLOW entry {entry!r} is neither a CIDR nor host:port",
                    field="outbound_allow",
                ) from None
            host = host.strip("[]").lower().rstrip(".")
            address = literal_address(host)
            endpoints.add((str(address) if address is not None else host, port))
        return cls(tuple(networks), frozenset(endpoints))

    def admits(self, host: str, port: int, address: Address, reason: str) -> bool:
        """Whether the operator let ``address`` (reached as ``host:port``) through."""
        if reason in NEVER_ADMITTED:
            return False
        if (str(address), port) in self.endpoints:
            return True
        if reason == METADATA:
            return False
        if any(address in net for net in self.networks):
            return True
        # a host name admits what it resolves to, except link-local (and
        # metadata, above): those only when allow-listed by address (issue 17)
        return reason != LINK_LOCAL and (host.lower().rstrip("."), port) in self.endpoints


def _display(url: str) -> str:
    """``url`` for an error message: user info masked, at most 200 characters."""
    return _USERINFO.sub(r"\1***@", url)[:200]


def _malformed_reason(url: str, error: Exception) -> str:
    """Why a URL httpx cannot parse is refused; names the address a numeric
    host spelling such as ``0177.0.0.1`` denotes."""
    try:
        host = urlsplit(url).hostname or ""
    except ValueError:
        host = ""
    address = literal_address(host)
    reason = classify(address) if address is not None else None
    if address is not None and reason is not None:
        return f"{host!r} means {address}, a {reason} (and the URL is malformed: {error})"
    return f"malformed URL ({error})"


def parse_target(url: str | httpx.URL) -> Target:
    """Parse and vet the syntax of an outbound URL (http/https, no user info,
    a host, a valid port)."""
    shown = _display(str(url))
    try:
        parsed = url if isinstance(url, httpx.URL) else httpx.URL(url)
    except (httpx.InvalidURL, TypeError, ValueError) as exc:
        raise OutboundRefused(shown, _malformed_reason(str(url), exc)) from None
    if parsed.scheme not in DEFAULT_PORTS:
        raise OutboundRefused(shown, f"scheme {parsed.scheme!r} is not allowed (http/https only)")
    if parsed.userinfo:
        raise OutboundRefused(shown, "user info (credentials before '@') is not allowed in a URL")
    host = parsed.raw_host.decode("ascii")
    if not host:
        raise OutboundRefused(shown, "the URL has no host")
    port = parsed.port or DEFAULT_PORTS[parsed.scheme]
    if not 0 < port < 65536:
        raise OutboundRefused(shown, f"port {port} is out of range")
    return Target(parsed, host, port)


def build_url(template: str, values: Mapping[str, Any]) -> str:
    """Render a URL template with every placeholder value percent-encoded
    (``quote(safe="")``, so a value cannot add a path segment, query, fragment
    or user info) and re-validate the result with :func:`parse_target`.
    Placeholders may not appear in the scheme or authority: the origin of a
    configured URL is never taken from data."""
    origin = _ORIGIN.match(template)
    if origin is None:
        raise OutboundRefused(_display(template), "the URL template is not an absolute http(s) URL")
    if "{{" in origin.group(0):
        raise OutboundRefused(
            _display(template), "placeholders may only appear in the path, query or fragment"
        )
    url = render(template, values, url_encode=True).strip()
    return str(parse_target(url).url)


async def resolve_host(host: str, port: int) -> list[str]:
    """Every address the system resolver gives for ``host`` (TCP)."""
    loop = asyncio.get_running_loop()
    infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [str(info[4][0]) for info in infos]


async def check_target(
    target: Target,
    allow: AllowList,
    *,
    resolver: Resolver | None = None,
    timeout_s: float = 5.0,
) -> CheckedTarget:
    """Resolve ``target`` and apply the policy; refuse if any address is barred."""
    shown = target.origin
    name = target.host.lower().rstrip(".")
    literal = literal_address(target.host)
    local_name = literal is None and (name == "localhost" or name.endswith(".localhost"))
    if local_name and (name, target.port) not in allow.endpoints:
        raise OutboundRefused(shown, f"{target.host!r} is a {LOOPBACK} name")
    if literal is not None:
        addresses: tuple[Address, ...] = (literal,)
    else:
        resolve = resolver or resolve_host
        try:
            async with asyncio.timeout(timeout_s):
                answers = await resolve(target.host, target.port)
            addresses = tuple(dict.fromkeys(ipaddress.ip_address(a.split("%")[0]) for a in answers))
        except (OSError, TimeoutError, ValueError) as exc:
            raise ResolutionFailed(f"cannot resolve {target.host!r}: {exc}") from None
        if not addresses:
            raise ResolutionFailed(f"cannot resolve {target.host!r}: no addresses")
    for address in addresses:
        reason = classify(address)
        if reason is not None and not allow.admits(name, target.port, address, reason):
            if literal is None:
                where = f"{target.host!r} resolves to {address},"
            elif target.host != str(address):
                where = f"{target.host!r} means {address},"
            else:
                where = f"{address} is"
            not_listed = "" if reason in NEVER_ADMITTED else " and not allow-listed"
            raise OutboundRefused(shown, f"{where} a {reason}{not_listed}")
    return CheckedTarget(target, addresses[0], addresses)
