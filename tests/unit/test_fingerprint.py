"""Error fingerprints (SPEC L-24): texts that differ only in ids, numbers,
URLs' variable parts and timestamps share a fingerprint; different causes
(including different HTTP statuses) do not."""

from __future__ import annotations

from flowledger.ledger.fingerprint import fingerprint, normalize_error


def test_variable_parts_are_masked() -> None:
    a = "HTTP 502 from https://erp.example.com/orders/123?x=1 after 3012 ms (req 9f8e7d6c5b4a)"
    b = "HTTP 502 from https://erp.example.com/orders/98765 after 12 ms (req 000011112222)"
    assert (
        normalize_error(a)
        == "HTTP_502 from https://erp.example.com/<path> after <n> ms (req <hex>)"
    )
    assert fingerprint(a) == fingerprint(b)


def test_different_causes_differ() -> None:
    assert fingerprint("HTTP 502 from https://a.example/x") != fingerprint(
        "HTTP 404 from https://a.example/x"
    )
    assert fingerprint("KeyError: 'vendor'") == fingerprint("KeyError: 'amount'")
    assert fingerprint("timeout after 30 s") != fingerprint("connection refused")
    assert fingerprint(None) is None


def test_uuids_and_timestamps_are_masked() -> None:
    text = "job 6f1c2d3e-4a5b-4c6d-8e7f-001122334455 failed at 2026-11-29T09:40:59Z"
    assert normalize_error(text) == "job <uuid> failed at <time>"
