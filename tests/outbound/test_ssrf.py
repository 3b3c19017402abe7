"""The SSRF guard (SPEC X-4), without a database.

A table of targets, each refused with ``OutboundRefused`` naming the reason,
while both the network backend and ``socket.connect`` fail the test if they
are reached (no packet is sent to the target; host names are answered by a
table resolver, so not even a DNS query leaves). Then: DNS rebinding — the
connection goes to the address that was checked; the allow-list admits
exactly what it lists; the address classification; ``build_url``.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Any

import pytest

from flowledger.errors import ConfigurationError
from flowledger.outbound.addresses import classify, literal_address
from flowledger.outbound.client import OutboundClient, PinnedBackend
from flowledger.outbound.ssrf import (
    AllowList,
    OutboundRefused,
    build_url,
    check_target,
    parse_target,
)
from flowledger.settings import Settings
from tests.outbound.fakes import RecordingBackend, TableResolver

PUBLIC = "93.184.216.34"
DNS = {
    "internal.example": ["10.1.2.3"],
    "mixed.example": [PUBLIC, "192.168.0.10"],
    "metadata.example": ["169.254.169.254"],
    "v6-loopback.example": ["::1"],
}

# (URL, a fragment of the reason the refusal must name)
TARGETS: list[tuple[str, str]] = [
    ("http://169.254.169.254/latest/meta-data/", "cloud metadata address"),
    ("http://[fd00:ec2::254]/", "cloud metadata address"),
    ("http://100.100.100.200/", "cloud metadata address"),
    ("http://192.0.0.192/", "cloud metadata address"),
    ("http://[::ffff:169.254.169.254]/", "cloud metadata address"),
    ("http://[::ffff:a9fe:a9fe]/", "cloud metadata address"),
    ("http://127.1/", "'127.1' means 127.0.0.1, a loopback address"),
    ("http://0x7f.1/", "'0x7f.1' means 127.0.0.1, a loopback address"),
    ("http://0177.0.0.1/", "'0177.0.0.1' means 127.0.0.1, a loopback address"),
    ("http://2130706433/", "'2130706433' means 127.0.0.1, a loopback address"),
    ("http://0x7f000001/", "means 127.0.0.1, a loopback address"),
    ("http://017700000001/", "means 127.0.0.1, a loopback address"),
    ("http://127.0.0.1:8080/", "127.0.0.1 is a loopback address and not allow-listed"),
    ("http://[::1]/", "loopback address"),
    ("http://[::ffff:127.0.0.1]/", "loopback address (127.0.0.1 in IPv4-mapped IPv6 form)"),
    ("http://[::127.0.0.1]/", "loopback address (127.0.0.1 in IPv4-compatible IPv6 form)"),
    ("http://[64:ff9b::7f00:1]/", "loopback address (127.0.0.1 in NAT64 IPv6 form)"),
    ("http://[2002:7f00:1::]/", "loopback address (127.0.0.1 in 6to4 IPv6 form)"),
    ("http://10.0.0.1/", "private address"),
    ("http://10.255.255.255/", "private address"),
    ("http://172.16.0.1/", "private address"),
    ("http://172.31.255.255/", "private address"),
    ("http://192.168.1.1/", "private address"),
    ("http://[fd00::1]/", "private address"),
    ("http://[fc00::1]/", "private address"),
    ("http://[fe80::1]/", "link-local address"),
    ("http://[fe80::1%25eth0]/", "link-local address"),
    ("http://169.254.1.1/", "link-local address"),
    ("http://0.0.0.0/", "unspecified address"),
    ("http://0/", "unspecified address"),
    ("http://[::]/", "unspecified address"),
    ("http://224.0.0.1/", "multicast address"),
    ("http://[ff02::1]/", "multicast address"),
    ("http://255.255.255.255/", "broadcast address"),
    ("http://240.0.0.1/", "reserved address"),
    ("http://100.64.0.1/", "carrier-grade NAT"),
    ("http://198.18.0.1/", "benchmarking address"),
    ("http://localhost/", "'localhost' is a loopback address name"),
    ("http://api.localhost:8123/", "loopback address name"),
    ("http://internal.example/", "'internal.example' resolves to 10.1.2.3, a private address"),
    ("http://mixed.example/", "'mixed.example' resolves to 192.168.0.10, a private address"),
    ("http://metadata.example/", "resolves to 169.254.169.254, a cloud metadata address"),
    ("https://v6-loopback.example/", "resolves to ::1, a loopback address"),
    ("ftp://example.com/file", "scheme 'ftp' is not allowed"),
    ("file:///etc/passwd", "scheme 'file' is not allowed"),
    ("gopher://127.0.0.1:70/", "scheme 'gopher' is not allowed"),
    ("http://user@127.0.0.1/", "user info"),
    ("http://evil.com@127.0.0.1:8123/", "user info"),
    ("http://127.0.0.1\\@evil.example/", "user info"),
    ("http://10.0.0.1:8123/", "10.0.0.1 is a private address and not allow-listed"),
    ("http://127.0.0.2:8123/", "127.0.0.2 is a loopback address and not allow-listed"),
    ("http://[::1]:8123/", "::1 is a loopback address and not allow-listed"),
    ("http:///nohost", "the URL has no host"),
    ("http://[::1/", "malformed URL"),
]


@pytest.fixture
def backend() -> RecordingBackend:
    return RecordingBackend(fail=True)


@pytest.fixture
async def client(backend: RecordingBackend) -> Any:
    settings = Settings(outbound_allow="127.0.0.1:8123")
    outbound = OutboundClient(settings, resolver=TableResolver(DNS), network_backend=backend)
    yield outbound
    await outbound.aclose()


def test_the_table_is_large_enough_X4() -> None:
    assert len(TARGETS) >= 30
    assert len({url for url, _ in TARGETS}) == len(TARGETS)


@pytest.mark.parametrize(("url", "reason"), TARGETS, ids=[url for url, _ in TARGETS])
async def test_refused_before_any_packet_X4(
    url: str,
    reason: str,
    client: OutboundClient,
    backend: RecordingBackend,
    no_sockets: list[Any],
) -> None:
    with pytest.raises(OutboundRefused) as info:
        await client.send("POST", url, content=b"x")
    error = info.value
    assert reason in error.reason, error.message
    assert error.code == "outbound_refused"
    assert error.message.startswith("outbound call to ") and reason in error.message
    assert backend.connects == []


async def test_dns_rebinding_connects_to_the_checked_address_X4(no_sockets: list[Any]) -> None:
    answers = iter([[PUBLIC], ["127.0.0.1"], ["127.0.0.1"]])

    async def rebinding(host: str, port: int) -> list[str]:
        return next(answers)

    backend = RecordingBackend()
    client = OutboundClient(Settings(), resolver=rebinding, network_backend=backend)
    try:
        response = await client.send("GET", "http://rebind.example/path?q=1")
        assert response.status == 200 and response.body == b"ok"
        # https: same pinning; SNI and certificate checks keep the host name
        answers = iter([[PUBLIC], ["127.0.0.1"]])
        await client.send("GET", "https://rebind.example/")
    finally:
        await client.aclose()
    assert backend.connects == [(PUBLIC, 80), (PUBLIC, 443)]
    assert b"Host: rebind.example\r\n" in backend.written
    assert backend.tls_server_names == ["rebind.example"]


async def test_the_backend_refuses_a_connection_that_was_not_checked_X4() -> None:
    pinned = PinnedBackend(RecordingBackend(fail=True))
    with pytest.raises(OutboundRefused, match="no checked address"):
        await pinned.connect_tcp("127.0.0.1", 80)
    with pytest.raises(OutboundRefused, match="unix sockets"):
        await pinned.connect_unix_socket("/var/run/docker.sock")
    assert pinned.inner.connects == []


ALLOW = "127.0.0.1:8123, 10.20.0.0/16, [::1]:8443, erp.internal:443, 169.254.0.0/16"
ALLOW_DNS = {"erp.internal": ["10.9.9.9"], "other.internal": ["10.9.9.9"]}


@pytest.mark.parametrize(
    ("url", "admitted"),
    [
        ("http://127.0.0.1:8123/", True),
        ("http://127.1:8123/", True),  # the same address, spelled differently
        ("http://127.0.0.1:8124/", False),
        ("http://127.0.0.2:8123/", False),
        ("http://10.20.0.1/", True),
        ("http://10.20.255.254:9999/", True),
        ("http://10.21.0.1/", False),
        ("http://[::1]:8443/", True),
        ("http://[::1]:8444/", False),
        ("https://erp.internal/", True),
        ("http://erp.internal:444/", False),
        ("https://other.internal/", False),  # same address, a name not listed
        ("http://169.254.169.254/", False),  # metadata: never through a CIDR
        ("http://169.254.1.1/", True),
        ("http://93.184.216.34/", True),  # public: no listing needed
    ],
)
async def test_allow_list_admits_exactly_what_it_lists_X4(url: str, admitted: bool) -> None:
    allow = AllowList.parse(ALLOW)
    check = check_target(parse_target(url), allow, resolver=TableResolver(ALLOW_DNS))
    if admitted:
        assert (await check).address is not None
    else:
        with pytest.raises(OutboundRefused):
            await check


async def test_metadata_only_through_an_exact_entry_X4() -> None:
    allow = AllowList.parse("169.254.169.254:80")
    checked = await check_target(parse_target("http://169.254.169.254/"), allow)
    assert str(checked.address) == "169.254.169.254"


@pytest.mark.parametrize(
    "url", ["http://169.254.169.254/", "http://0.0.0.0/", "http://224.0.0.1/", "http://[::]/"]
)
async def test_a_catch_all_cidr_never_admits_metadata_unspecified_multicast_X4(url: str) -> None:
    allow = AllowList.parse("0.0.0.0/0, ::/0")
    assert (await check_target(parse_target("http://10.0.0.1/"), allow)).address is not None
    with pytest.raises(OutboundRefused):
        await check_target(parse_target(url), allow)


@pytest.mark.parametrize("entry", ["nonsense", "10.0.0.0/33", "host:0", "host:http", ":80"])
def test_bad_allow_list_entries_are_configuration_errors(entry: str) -> None:
    with pytest.raises(ConfigurationError, match="FLOWLEDGER_OUTBOUND_ALLOW"):
        AllowList.parse(entry)


@pytest.mark.parametrize(
    ("address", "reason"),
    [
        ("8.8.8.8", None),
        ("2606:4700::1111", None),
        ("::ffff:8.8.8.8", None),
        ("64:ff9b::808:808", None),
        ("::8.8.8.8", "deprecated IPv4-compatible IPv6 address"),
        ("2001::1", "Teredo tunnel address"),
        ("2001:db8::1", "documentation address"),
        ("168.63.129.16", "cloud metadata address"),
    ],
)
def test_classify(address: str, reason: str | None) -> None:
    assert classify(ipaddress.ip_address(address)) == reason


def test_literal_spellings_follow_inet_aton() -> None:
    spelled = ["127.1", "0x7f.1", "0177.0.0.1", "2130706433", "0x7f.0.0.1", "127.0.1"]
    assert {str(literal_address(s)) for s in spelled} == {"127.0.0.1"}
    assert literal_address("example.com") is None
    assert literal_address("1.2.3.4.5") is None


def test_build_url_percent_encodes_values_X4() -> None:
    url = build_url(
        "https://api.example.com/orders/{{form.id}}?who={{form.who}}",
        {"form": {"id": "../admin?x=1#f", "who": "a b&c=d@127.0.0.1"}},
    )
    assert (
        url == "https://api.example.com/orders/..%2Fadmin%3Fx%3D1%23f?who=a%20b%26c%3Dd%40127.0.0.1"
    )
    assert parse_target(url).host == "api.example.com"


@pytest.mark.parametrize(
    ("template", "reason"),
    [
        ("https://{{host}}/x", "placeholders may only appear in the path"),
        ("http://api.example.com:{{port}}/", "placeholders may only appear in the path"),
        ("{{base}}/x", "not an absolute http(s) URL"),
        ("ftp://example.com/{{p}}", "scheme 'ftp' is not allowed"),
    ],
)
def test_build_url_refuses_data_in_the_origin_X4(template: str, reason: str) -> None:
    with pytest.raises(OutboundRefused, match=re.escape(reason)):
        build_url(template, {"host": "127.0.0.1", "port": 22, "base": "http://10.0.0.1", "p": 1})


def test_the_socket_guard_catches_a_connect(no_sockets: list[Any]) -> None:
    import socket

    with socket.socket() as sock, pytest.raises(AssertionError, match="tried to reach"):
        sock.connect(("127.0.0.1", 9))
    assert no_sockets == [(("127.0.0.1", 9),)]
    no_sockets.clear()
