"""Issue 17 item 10 (SPEC A-4): every error the edge can answer is documented
in OpenAPI like any other — 422 (parse errors included) and 413 on every
operation — and the attachment download documents the content types it
serves (each allowed attachment type), not ``application/octet-stream``."""

from __future__ import annotations

from pathlib import Path

from flowledger.api import create_app
from flowledger.compensation.attachments import ALLOWED
from flowledger.db.database import Database

DOWNLOAD = "/api/workflows/compensation/{ticketId}/attachments/{logId}"


def _openapi(tmp_path: Path) -> dict:
    return create_app(Database(f"sqlite:///{tmp_path / 'x.db'}")).openapi()


def test_every_operation_documents_422_and_413_item10(tmp_path: Path) -> None:
    spec = _openapi(tmp_path)
    for path, item in spec["paths"].items():
        for method, operation in item.items():
            if path.startswith("/api/workflows"):
                assert "422" in operation["responses"], (method, path)
                assert "413" in operation["responses"], (method, path)


def test_attachment_download_documents_the_served_types_item10(tmp_path: Path) -> None:
    content = _openapi(tmp_path)["paths"][DOWNLOAD]["get"]["responses"]["200"]["content"]
    assert set(content) == set(ALLOWED)
