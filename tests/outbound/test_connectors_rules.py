"""Connector rules without I/O (SPEC X-3): which relative paths a connector
call may take (same origin, under the base URL's prefix), what each auth
kind sends, and which configurations are refused — each refusal naming its
field."""

from __future__ import annotations

import base64
from dataclasses import replace
from typing import Any

import httpx
import pytest

from flowledger.outbound.connector_auth import auth_headers
from flowledger.outbound.connector_config import (
    BreakerSettings,
    ConnectorDraft,
    RateLimit,
    check_draft,
)
from flowledger.outbound.connector_errors import ConnectorInvalid, ConnectorPathRefused
from flowledger.outbound.connector_paths import resolve_path
from flowledger.outbound.signing import verify

BASE = "https://erp.example:8443/api/v1"


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/orders", f"{BASE}/orders"),
        ("/orders/42?expand=lines&x=%2F", f"{BASE}/orders/42?expand=lines&x=%2F"),
        ("/", f"{BASE}/"),
        ("/files/my%20doc", f"{BASE}/files/my%20doc"),
        ("/a/b..c/.well-known", f"{BASE}/a/b..c/.well-known"),
    ],
)
def test_relative_paths_join_under_the_base_X3(path: str, expected: str) -> None:
    assert resolve_path(BASE, path) == expected
    assert resolve_path(BASE + "/", path) == expected


ESCAPES = [
    "orders",  # not starting with /
    "//evil.example/x",  # scheme-relative: another host
    "https://evil.example/x",  # absolute
    "http://erp.example:8443/api/v1/x",  # absolute, even to the same origin
    "/../x",
    "/a/../../x",
    "/%2e%2e/x",
    "/%2E%2E/admin",
    "/a/..%2f..%2fx",
    "/%252e%252e/x",  # double-encoded
    "/./x",
    "/\\evil.example",
    "/%5cevil",
    "/a b",
    "/x\r\nHost: evil",
    "/x#frag",
    "",
]


@pytest.mark.parametrize("path", ESCAPES)
def test_paths_that_could_leave_the_base_are_refused_X3(path: str) -> None:
    with pytest.raises(ConnectorPathRefused) as caught:
        resolve_path(BASE, path)
    assert caught.value.code == "connector_path_refused"


def test_a_root_base_url_allows_any_path_on_its_origin_X3() -> None:
    assert resolve_path("http://127.0.0.1:8080", "/x/y") == "http://127.0.0.1:8080/x/y"
    with pytest.raises(ConnectorPathRefused):
        resolve_path("http://127.0.0.1:8080", "//127.0.0.2:8080/x")


def _auth(kind: str, **extra: Any) -> Any:
    args: dict[str, Any] = {
        "secret": "s3cret",
        "username": None,
        "header_name": None,
        "body": b'{"a":1}',
        "timestamp": 1_767_225_600,
    }
    return auth_headers(kind, **{**args, **extra})


def test_auth_headers_per_kind_X3() -> None:
    assert _auth("none", secret=None).headers == {}
    bearer = _auth("bearer")
    assert bearer.headers == {"Authorization": "Bearer s3cret"}
    assert bearer.secret_names == {"Authorization"}
    basic = _auth("basic", username="ann")
    assert basic.headers == {"Authorization": "Basic " + base64.b64encode(b"ann:s3cret").decode()}
    key = _auth("api_key", header_name="X-Partner-Key")
    assert key.headers == {"X-Partner-Key": "s3cret"} and key.secret_names == {"X-Partner-Key"}
    signed = _auth("hmac")
    assert signed.secret_names == {"X-Flowledger-Signature"}
    verify(
        "s3cret",
        httpx.Headers(signed.headers),
        b'{"a":1}',
        now=1_767_225_600,
        tolerance_s=300,
    )
    assert "s3cret" not in repr(signed.headers)


OK = ConnectorDraft(key="erp", name="ERP", base_url="https://erp.example/api/")


def test_a_valid_draft_is_normalised_X3() -> None:
    draft = check_draft(replace(OK, rate_limit=RateLimit(2.5, 0)))
    assert draft.base_url == "https://erp.example/api"
    assert draft.rate_limit == RateLimit(2.5, 3)  # default burst: ceil(rps)
    assert draft.circuit_breaker == BreakerSettings(5, 30.0)
    assert "secret" not in repr(replace(OK, auth_kind="bearer", secret="tok"))
    assert "tok" not in repr(replace(OK, auth_kind="bearer", secret="tok"))


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"key": "9lives"}, "key"),
        ({"name": "  "}, "name"),
        ({"base_url": "ftp://erp.example"}, "baseUrl"),
        ({"base_url": "https://user:pw@erp.example"}, "baseUrl"),
        ({"base_url": "https://erp.example/api?x=1"}, "baseUrl"),
        ({"base_url": "https://erp.example/api#x"}, "baseUrl"),
        ({"base_url": "https://erp.example/a/../b"}, "baseUrl"),
        ({"base_url": "https:///nohost"}, "baseUrl"),
        ({"base_url": "https://erp.example:99999"}, "baseUrl"),
        ({"auth_kind": "kerberos"}, "authKind"),
        ({"auth_kind": "bearer"}, "secret"),
        ({"auth_kind": "bearer", "secret": "two words\n"}, "secret"),
        ({"secret": "x"}, "secret"),  # authKind none takes no secret
        ({"auth_kind": "basic", "secret": "pw"}, "username"),
        ({"auth_kind": "basic", "secret": "pw", "username": "a:b"}, "username"),
        ({"auth_kind": "api_key", "secret": "k"}, "headerName"),
        ({"auth_kind": "api_key", "secret": "k", "header_name": "Bad Name"}, "headerName"),
        ({"auth_kind": "api_key", "secret": "k", "header_name": "X-Idempotency-Key"}, "headerName"),
        ({"username": "ann"}, "username"),
        ({"header_name": "X-Key"}, "headerName"),
        ({"rate_limit": RateLimit(0, 1)}, "rateLimit.requestsPerSecond"),
        ({"rate_limit": RateLimit(float("nan"), 1)}, "rateLimit.requestsPerSecond"),
        ({"rate_limit": RateLimit(1, 10_001)}, "rateLimit.burst"),
        ({"circuit_breaker": BreakerSettings(0, 30)}, "circuitBreaker.failureThreshold"),
        ({"circuit_breaker": BreakerSettings(5, 0.01)}, "circuitBreaker.resetTimeoutS"),
        ({"default_headers": {"Authorization": "Bearer x"}}, "defaultHeaders.Authorization"),
        ({"default_headers": {"X-Auth-Token": "x"}}, "defaultHeaders.X-Auth-Token"),
        ({"default_headers": {"Host": "evil"}}, "defaultHeaders.Host"),
        ({"default_headers": {"X-A": "a\r\nX-B: b"}}, "defaultHeaders.X-A"),
        ({"default_headers": {"Bad Name": "x"}}, "defaultHeaders.Bad Name"),
    ],
)
def test_invalid_drafts_name_their_field_X3(change: dict[str, Any], field: str) -> None:
    with pytest.raises(ConnectorInvalid) as caught:
        check_draft(replace(OK, **change))
    assert caught.value.field == field
    assert caught.value.code == "connector_invalid"
