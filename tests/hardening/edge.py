"""Helpers of the hardening tests (issue 17): post raw bytes, check a refusal
(status, ``code``, ``field``), that nothing was written, and that the server
log holds no traceback."""

from __future__ import annotations

import logging
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select

from flowledger.db.database import Database
from flowledger.db.engine_schema import (
    workflow_definitions,
    workflow_instances,
    workflow_schedules,
    workflow_tasks,
)
from flowledger.db.schema import workflow_jobs

BASE = "/api/workflows"
WATCHED = (
    workflow_definitions,
    workflow_instances,
    workflow_schedules,
    workflow_tasks,
    workflow_jobs,
)  # operation_audit is not watched: a refused mutation is audited as refused


async def counts(db: Database) -> dict[str, int]:
    out: dict[str, int] = {}
    async with db.read() as conn:
        for table in WATCHED:
            n = (await conn.execute(select(func.count()).select_from(table))).scalar_one()
            out[table.name] = int(n)
    return out


async def post_raw(
    client: httpx.AsyncClient, path: str, raw: bytes | str, headers: dict[str, str]
) -> httpx.Response:
    content = raw.encode() if isinstance(raw, str) else raw
    return await client.post(
        f"{BASE}{path}",
        content=content,
        headers={**headers, "Content-Type": "application/json"},
    )


def assert_refused(response: httpx.Response, status: int, code: str, field: str | None) -> Any:
    assert response.status_code == status, response.text
    body = response.json()
    assert body["code"] == code, body
    if field is not None:
        assert body["field"] == field, body
    assert "Traceback" not in response.text
    return body


def assert_no_traceback(caplog: pytest.LogCaptureFixture) -> None:
    bad = [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]
    assert bad == [], [r.getMessage() for r in bad]
