"""Notes and attachments on tickets (SPEC C-9): a JSON note or a multipart
file on a ticket in any status; files are stored under the configured
directory with a generated name, size-limited and type-checked (declared
type on the allow-list and content that agrees), downloadable by monitors;
each note writes a history row and an audit row."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import httpx

from flowledger.clock import ManualClock
from flowledger.compensation import operations
from flowledger.db.database import Database
from flowledger.engine import Engine
from flowledger.settings import Settings
from tests.api.conftest import BASE, Api, People
from tests.compensation.flows import audit_rows, deploy, failed_instance, history, repair_at

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR" + bytes(40)


async def _ticket(engine: Engine, db: Database, clock: ManualClock) -> int:
    await deploy(engine)
    iid = await failed_instance(engine, db, clock)
    ticket_id = await repair_at(engine, iid)
    assert ticket_id is not None
    return ticket_id


async def _upload(
    api: Api, headers: dict[str, str], ticket_id: int, name: str, data: bytes, kind: str
) -> httpx.Response:
    return await api.client.post(
        f"{BASE}/compensation/{ticket_id}/note",
        headers=headers,
        files={"file": (name, data, kind)},
        data={"message": "receipt from the ERP"},
    )


async def test_json_note_on_any_ticket_status_C9(
    api: Api, people: People, engine: Engine, db: Database, clock: ManualClock
) -> None:
    ticket_id = await _ticket(engine, db, clock)
    await operations.release(engine, ticket_id, actor="ops")
    response = await api.post(f"/compensation/{ticket_id}/note", people.ops, {"message": "called"})
    assert response.status_code == 201, response.text
    body = response.json()
    assert (body["kind"], body["actor"], body["message"]) == ("note", "ops", "called")
    assert body["attachment"] is None
    assert [h["kind"] for h in await history(db, ticket_id)] == ["created", "release", "note"]
    [audit] = await audit_rows(db, ticket_id)
    assert (audit["action"], audit["result"], audit["detail"]["logId"]) == (
        "compensation.note",
        "ok",
        body["id"],
    )
    empty = await api.post(f"/compensation/{ticket_id}/note", people.ops, {"message": ""})
    assert empty.status_code == 422 and empty.json()["code"] == "validation_error"
    extra = await api.post(f"/compensation/{ticket_id}/note", people.ops, {"message": "x", "y": 1})
    assert extra.status_code == 422


async def test_attachment_is_stored_with_generated_name_and_downloadable_C9(
    api: Api,
    people: People,
    engine: Engine,
    db: Database,
    clock: ManualClock,
    compensation_settings: Settings,
) -> None:
    ticket_id = await _ticket(engine, db, clock)
    response = await _upload(api, people.ops, ticket_id, "../../etc/receipt.png", PNG, "image/png")
    assert response.status_code == 201, response.text
    body = response.json()
    assert body["kind"] == "attachment" and body["message"] == "receipt from the ERP"
    assert body["attachment"]["name"] == "receipt.png"
    assert (body["attachment"]["contentType"], body["attachment"]["sizeBytes"]) == (
        "image/png",
        len(PNG),
    )
    [row] = [h for h in await history(db, ticket_id) if h["kind"] == "attachment"]
    stored = Path(compensation_settings.attachments_dir) / row["stored_name"]
    assert stored.read_bytes() == PNG and row["stored_name"].endswith(".png")
    assert "receipt" not in row["stored_name"]
    download = await api.client.get(body["attachment"]["url"], headers=people.mon)
    assert download.status_code == 200 and download.content == PNG
    assert download.headers["content-type"] == "image/png"
    assert "attachment" in download.headers["content-disposition"]
    assert download.headers["x-content-type-options"] == "nosniff"
    audit = (await audit_rows(db, ticket_id))[-1]
    assert (audit["action"], audit["detail"]["contentType"]) == (
        "compensation.attachment",
        "image/png",
    )
    missing = await api.get(f"/compensation/{ticket_id}/attachments/{row['id'] + 99}", people.mon)
    assert missing.status_code == 404


async def test_attachment_size_and_type_are_checked_C9(
    api: Api,
    people: People,
    engine: Engine,
    db: Database,
    clock: ManualClock,
    compensation_settings: Settings,
) -> None:
    ticket_id = await _ticket(engine, db, clock)
    cases = [
        ("big.txt", b"x" * 2049, "text/plain", "attachment_too_large"),
        ("tool.exe", b"MZ\x90\x00", "application/x-msdownload", "attachment_type_not_allowed"),
        ("fake.png", b"just text", "image/png", "attachment_type_not_allowed"),
        ("bad.json", b"{nope", "application/json", "attachment_type_not_allowed"),
        ("bin.txt", b"\xff\xfe\x00", "text/plain", "attachment_type_not_allowed"),
        ("empty.csv", b"", "text/csv", "attachment_empty"),
    ]
    for name, data, kind, code in cases:
        response = await _upload(api, people.ops, ticket_id, name, data, kind)
        expected = 413 if code == "attachment_too_large" else 422
        assert response.status_code == expected, response.text
        assert response.json()["code"] == code, name
        assert response.json()["field"] == "file"
    ok = await _upload(api, people.ops, ticket_id, "a.csv", b"a,b\n" * 512, "text/csv")
    assert ok.status_code == 201  # exactly the limit
    assert [h["kind"] for h in await history(db, ticket_id)] == ["created", "attachment"]
    directory = Path(compensation_settings.attachments_dir)
    names = await asyncio.to_thread(lambda: [p.name for p in directory.iterdir()])
    assert len([n for n in names if not n.startswith(".")]) == 1
    no_file = await api.client.post(
        f"{BASE}/compensation/{ticket_id}/note",
        headers=people.ops,
        data={"message": "hi"},
        files={"other": ("x.txt", b"x", "text/plain")},
    )
    assert no_file.status_code == 422 and no_file.json()["code"] == "note_empty"
    failed = [a for a in await audit_rows(db, ticket_id) if a["result"] == "failed"]
    assert len(failed) == len(cases) + 1


async def test_note_bodies_are_bounded_before_they_are_read_C9(
    api: Api, people: People, engine: Engine, db: Database, clock: ManualClock
) -> None:
    ticket_id = await _ticket(engine, db, clock)
    url = f"{BASE}/compensation/{ticket_id}/note"
    # without the permission nothing of the body is looked at: 403, not 422
    refused = await api.client.post(url, headers=people.mon, content=b"{not json")
    assert refused.status_code == 403, refused.text
    # a JSON note larger than 64 KiB: 413 from its Content-Length
    big = await api.client.post(url, headers=people.ops, json={"message": "x" * 70_000})
    assert (big.status_code, big.json()["code"]) == (413, "note_too_large")

    # a chunked upload (no Content-Length) is refused, not spooled unbounded
    async def chunks() -> AsyncIterator[bytes]:
        yield b"--b\r\nContent-Disposition: form-data; name=file; filename=a.txt\r\n"
        yield b"Content-Type: text/plain\r\n\r\nhello\r\n--b--\r\n"

    headers = {**people.ops, "Content-Type": "multipart/form-data; boundary=b"}
    chunked = await api.client.post(url, headers=headers, content=chunks())
    assert (chunked.status_code, chunked.json()["code"]) == (411, "length_required")
    assert [h["kind"] for h in await history(db, ticket_id)] == ["created"]
