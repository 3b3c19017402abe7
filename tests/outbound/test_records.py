"""What an outbound call leaves on the attempt row: secret headers redacted,
secret query parameters masked, bodies cut at the limit with a marker."""

from __future__ import annotations

from flowledger.outbound.records import (
    REDACTED,
    body_record,
    is_secret,
    redact_headers,
    redact_url,
    request_record,
    response_record,
)


def test_secret_headers_are_redacted() -> None:
    headers = {
        "Authorization": "Bearer abc",
        "Proxy-Authorization": "Basic xyz",
        "Cookie": "sid=1",
        "X-Api-Key": "k-123",
        "X-Client-Secret": "s",
        "X-Auth-Token": "t",
        "X-Refresh-TOKEN-Id": "t2",
        "X-Password": "p",
        "X-Idempotency-Key": "op-1",
        "Content-Type": "application/json",
    }
    shown = redact_headers(headers)
    visible = {"x-idempotency-key": "op-1", "content-type": "application/json"}
    assert {k: v for k, v in shown.items() if v != REDACTED} == visible
    assert len(shown) == len(headers)
    assert "abc" not in repr(shown) and "k-123" not in repr(shown)


def test_repeated_response_headers_are_joined_and_redacted() -> None:
    shown = redact_headers(
        [("Set-Cookie", "a=1"), ("Set-Cookie", "b=2"), ("Vary", "A"), ("vary", "B")]
    )
    assert shown == {"set-cookie": f"{REDACTED}, {REDACTED}", "vary": "A, B"}


def test_secret_query_parameters_are_masked() -> None:
    url = "https://x.example/cb?id=7&access_token=abc&api_key=k&sig=s&page=2&key=z"
    assert redact_url(url) == (
        f"https://x.example/cb?id=7&access_token={REDACTED}&api_key={REDACTED}"
        f"&sig={REDACTED}&page=2&key={REDACTED}"
    )


def test_body_is_truncated_at_the_limit_with_a_marker() -> None:
    record = body_record(b"a" * 100, 10)
    assert record == {
        "body": "a" * 10 + "…[truncated: 100 bytes, first 10 kept]",
        "body_bytes": 100,
        "body_truncated": True,
    }
    assert body_record(b"a" * 10, 10) == {
        "body": "a" * 10,
        "body_bytes": 10,
        "body_truncated": False,
    }
    assert body_record(None, 10)["body"] is None
    # a multi-byte character cut in half does not break the record
    assert body_record("é".encode() * 3, 3)["body"].startswith("é\ufffd…[truncated")


def test_request_and_response_records() -> None:
    request = request_record(
        "post",
        "https://x.example/a?token=t",
        {"Authorization": "Bearer s3cret", "X-Idempotency-Key": "k"},
        b"x" * 50,
        limit=8,
    )
    assert request["method"] == "POST"
    assert request["url"] == f"https://x.example/a?token={REDACTED}"
    assert request["headers"] == {"authorization": REDACTED, "x-idempotency-key": "k"}
    assert request["body_truncated"] and request["body"].startswith("xxxxxxxx…")
    assert "s3cret" not in repr(request)
    response = response_record(
        502, [("Set-Cookie", "sid=1")], b"bad gateway", limit=100, duration_ms=12, complete=False
    )
    assert response == {
        "status": 502,
        "headers": {"set-cookie": REDACTED},
        "body": "bad gateway",
        "body_bytes": 11,
        "body_truncated": False,
        "duration_ms": 12,
        "body_complete": False,
    }


def test_signature_headers_are_redacted_X4() -> None:
    """An HMAC signature lets a reader replay the signed request: any header
    whose name contains "signature" is redacted on the attempt row."""
    headers = {
        "X-Flowledger-Signature": "sha256=abc123",
        "X-Signature": "def456",
        "X-Hub-Signature-256": "sha256=ghi789",
        "X-Flowledger-Timestamp": "1700000000",
    }
    shown = request_record("POST", "https://x.example/hook", headers, b"{}", limit=100)["headers"]
    assert shown == {
        "x-flowledger-signature": REDACTED,
        "x-signature": REDACTED,
        "x-hub-signature-256": REDACTED,
        "x-flowledger-timestamp": "1700000000",
    }
    assert is_secret("X-Signature") and not is_secret("X-Flowledger-Timestamp")
