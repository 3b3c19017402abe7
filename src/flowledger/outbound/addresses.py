"""What an IP address is, for the SSRF guard (SPEC X-4).

:func:`classify` names why an address may not be reached — loopback, private,
link-local, cloud metadata, unspecified, multicast, broadcast, reserved,
carrier-grade NAT, documentation/benchmarking ranges, and the IPv6 forms that
embed an IPv4 address (IPv4-mapped ``::ffff:127.0.0.1``, IPv4-compatible
``::127.0.0.1``, NAT64 ``64:ff9b::7f00:1``, 6to4 ``2002:7f00:1::``), judged by
the address they embed — or returns None for a public unicast address.
Python's ``is_global`` is only the last net: its tables differ between patch
releases (3.11.7 calls ``::127.0.0.1`` global), so the rules are explicit.

:func:`literal_address` reads an IP literal or a legacy numeric IPv4 spelling
(``127.1``, ``0x7f.1``, ``0177.0.0.1``, ``2130706433``) the way ``inet_aton``
— and so the system resolver — would.
"""

from __future__ import annotations

import ipaddress
import re
import socket

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network
LOOPBACK = "loopback address"
PRIVATE = "private address"
LINK_LOCAL = "link-local address"
METADATA = "cloud metadata address"
UNSPECIFIED = "unspecified address"
MULTICAST = "multicast address"
BROADCAST = "broadcast address"
RESERVED = "reserved address"
CGNAT = "carrier-grade NAT (shared) address"
NEVER_ADMITTED = frozenset({UNSPECIFIED, MULTICAST, BROADCAST})

METADATA_ADDRESSES = frozenset(
    ipaddress.ip_address(a)
    for a in (
        "169.254.169.254",  # AWS, GCP, Azure, OpenStack, DigitalOcean …
        "fd00:ec2::254",  # AWS IPv6
        "100.100.100.200",  # Alibaba Cloud
        "168.63.129.16",  # Azure wire server (a public address!)
        "192.0.0.192",  # Oracle Cloud
    )
)


def _rules(*pairs: tuple[str, str]) -> tuple[tuple[Network, str], ...]:
    return tuple((ipaddress.ip_network(net), reason) for net, reason in pairs)


# First match wins; anything else that is not ``is_global`` is refused too.
_V4_RULES = _rules(
    ("0.0.0.0/32", UNSPECIFIED),
    ("0.0.0.0/8", "'this network' address"),
    ("10.0.0.0/8", PRIVATE),
    ("100.64.0.0/10", CGNAT),
    ("127.0.0.0/8", LOOPBACK),
    ("169.254.0.0/16", LINK_LOCAL),
    ("172.16.0.0/12", PRIVATE),
    ("192.0.0.0/24", "IETF protocol assignment address"),
    ("192.0.2.0/24", "documentation address"),
    ("192.88.99.0/24", "6to4 relay anycast address"),
    ("192.168.0.0/16", PRIVATE),
    ("198.18.0.0/15", "benchmarking address"),
    ("198.51.100.0/24", "documentation address"),
    ("203.0.113.0/24", "documentation address"),
    ("224.0.0.0/4", MULTICAST),
    ("255.255.255.255/32", BROADCAST),
    ("240.0.0.0/4", RESERVED),
)
_V6_RULES = _rules(
    ("::/128", UNSPECIFIED),
    ("::1/128", LOOPBACK),
    ("100::/64", "discard-only address"),
    ("2001::/32", "Teredo tunnel address"),
    ("2001:db8::/32", "documentation address"),
    ("64:ff9b:1::/48", "local-use NAT64 address"),
    ("fc00::/7", PRIVATE),
    ("fe80::/10", LINK_LOCAL),
    ("fec0::/10", "site-local address"),
    ("ff00::/8", MULTICAST),
)
_MAPPED = ipaddress.IPv6Network("::ffff:0:0/96")
_TRANSLATED = ipaddress.IPv6Network("::ffff:0:0:0/96")
_COMPAT = ipaddress.IPv6Network("::/96")
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_LEGACY_V4 = re.compile(r"(0[xX][0-9a-fA-F]*|[0-9]+)(\.(0[xX][0-9a-fA-F]*|[0-9]+)){0,3}")


def _embedded_v4(ip: ipaddress.IPv6Address) -> tuple[ipaddress.IPv4Address, str] | None:
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped, "IPv4-mapped IPv6"
    packed = ip.packed
    if ip in _TRANSLATED:
        return ipaddress.IPv4Address(packed[-4:]), "IPv4-translated IPv6"
    if ip in _NAT64:
        return ipaddress.IPv4Address(packed[-4:]), "NAT64 IPv6"
    if ip.sixtofour is not None:
        return ip.sixtofour, "6to4 IPv6"
    if ip in _COMPAT:
        return ipaddress.IPv4Address(packed[-4:]), "IPv4-compatible IPv6"
    return None


def classify(ip: Address) -> str | None:
    """Why ``ip`` may not be reached (None for a public unicast address)."""
    if isinstance(ip, ipaddress.IPv6Address) and ip.scope_id:
        ip = ipaddress.IPv6Address(ip.packed)
    if ip in METADATA_ADDRESSES:
        return METADATA
    if isinstance(ip, ipaddress.IPv6Address):
        for net, reason in _V6_RULES:
            if ip in net:
                return reason
        embedded = _embedded_v4(ip)
        if embedded is not None:
            v4, form = embedded
            inner = classify(v4)
            if inner is not None:
                return f"{inner} ({v4} in {form} form)"
            if form == "IPv4-compatible IPv6":
                return "deprecated IPv4-compatible IPv6 address"
            return None
    else:
        for net, reason in _V4_RULES:
            if ip in net:
                return reason
    return None if ip.is_global else "non-global address"


def literal_address(host: str) -> Address | None:
    """The address ``host`` denotes without DNS: an IP literal, or a legacy
    numeric IPv4 spelling normalised the way ``inet_aton`` reads it."""
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        pass
    if _LEGACY_V4.fullmatch(host):
        try:
            return ipaddress.IPv4Address(socket.inet_aton(host))
        except OSError:
            return None
    return None
