"""The operation audit (SPEC A-2) and the error mapping (A-4): every
mutation writes one audit row — ``ok`` on success, ``failed`` with
``detail.code`` on failure (refusals included) — after the engine call;
reads and requests refused before a route runs (401, malformed body) write
none. Unexpected errors are 500 ``internal_error`` with no stack trace in
the body; unknown routes and methods keep the error body shape."""

from __future__ import annotations

from typing import Any

import httpx
from sqlalchemy import text

from flowledger.access.audit import AuditEntry
from flowledger.api import create_app
from flowledger.clock import ManualClock
from flowledger.db.database import Database
from flowledger.db.engine_schema import operation_audit
from flowledger.engine import Engine
from tests.api.conftest import Api, People, approval


def _summary(rows: list[dict]) -> list[tuple[Any, ...]]:
    return [(r["actor"], r["action"], r["target_type"], r["result"]) for r in rows]


async def test_success_rows(api: Api, people: People) -> None:
    definition = await api.deploy(people.root, approval())
    instance = await api.start(people.ann)
    task = instance["tasks"][0]["id"]
    await api.post(f"/tasks/{task}/approve", people.mia, {"comment": "fine"})
    rows = await api.rows(operation_audit)
    assert _summary(rows) == [
        ("root", "definition.deploy", "definition", "ok"),
        ("ann", "instance.start", "instance", "ok"),
        ("mia", "task.approve", "task", "ok"),
    ]
    deploy, start, approve = rows
    assert deploy["target_id"] == str(definition["id"]) and deploy["tenant_id"] == "default"
    assert deploy["detail"] == {"key": "leave", "version": 1}
    assert start["target_id"] == str(instance["id"])
    assert start["detail"]["definitionKey"] == "leave"
    assert approve["target_id"] == str(task) and approve["reason"] == "fine"
    assert approve["detail"] == {"instanceId": instance["id"]}
    assert approve["created_at"] == api.clock.now()


async def test_lifecycle_rows_carry_reason(api: Api, people: People) -> None:
    await api.deploy(people.root, approval())
    instance = await api.start(people.ann)
    await api.post(f"/instances/{instance['id']}/suspend", people.ops, {"reason": "look"})
    await api.post(f"/instances/{instance['id']}/cancel", people.ops, {"reason": "duplicate"})
    rows = (await api.rows(operation_audit))[2:]
    assert [(r["action"], r["reason"], r["result"]) for r in rows] == [
        ("instance.suspend", "look", "ok"),
        ("instance.cancel", "duplicate", "ok"),
    ]
    assert rows[0]["detail"] == {"pausedJobs": []}


async def test_failure_rows(api: Api, people: People) -> None:
    await api.deploy(people.root, approval())
    bad_form = await api.post("/instances", people.ann, {"definitionKey": "leave", "form": {}})
    assert bad_form.status_code == 422
    instance = await api.start(people.ann)
    forbidden = await api.post(f"/instances/{instance['id']}/cancel", people.mia)
    assert forbidden.status_code == 403
    acme = await api.admin("acme", tenants=["acme"])
    hidden = await api.post(f"/instances/{instance['id']}/cancel", acme, {"reason": "x"})
    assert hidden.status_code == 404
    await api.post(f"/instances/{instance['id']}/cancel", people.ops)
    twice = await api.post(f"/instances/{instance['id']}/cancel", people.ops)
    assert twice.status_code == 409
    bad_definition = await api.post("/definitions", people.dev, {"source": "key: ["})
    assert bad_definition.status_code == 422
    rows = [r for r in await api.rows(operation_audit) if r["result"] == "failed"]
    assert [(r["actor"], r["action"], r["detail"]["code"]) for r in rows] == [
        ("ann", "instance.start", "form_invalid"),
        ("mia", "instance.cancel", "forbidden"),
        ("acme", "instance.cancel", "instance_not_found"),
        ("ops", "instance.cancel", "instance_state"),
        ("dev", "definition.deploy", "definition_invalid"),
    ]
    assert rows[0]["target_id"] is None and rows[0]["tenant_id"] == "default"
    assert rows[2]["tenant_id"] is None and rows[2]["reason"] == "x"
    assert rows[3]["tenant_id"] == "default"


async def test_no_rows_for_reads_401_and_malformed_bodies(api: Api, people: People) -> None:
    await api.get("/instances", people.mon)
    await api.get("/me", people.ann)
    await api.client.post("/api/workflows/instances", json={"definitionKey": "leave"})
    await api.post("/instances", people.ann, {"form": "not an object"})
    assert await api.count(operation_audit) == 0


async def test_an_unwritable_audit_refuses_the_change(api: Api, people: People) -> None:
    """SPEC A-2, A-4 (issue 29 item 2): a service writes the audit row of
    its change in the change's own transaction — with the row unwritable a
    saved view is not created (500) and nothing is half-written. (Until the
    services owned their rows, the outcome stood and the row was lost.)"""
    async with api.db.begin() as conn:
        await conn.execute(text("DROP TABLE operation_audit"))
    response = await api.post("/views", people.mon, {"scope": "instances", "name": "stuck"})
    assert response.status_code == 500 and response.json()["code"] == "internal_error"
    async with api.db.read() as conn:
        count = (await conn.execute(text("SELECT count(*) FROM workflow_saved_views"))).scalar_one()
    assert count == 0


async def test_an_engine_action_and_its_row_commit_together(api: Api, people: People) -> None:
    """SPEC A-2, A-4 (issue 29 item 2): the engine's actions write their
    audit row in their own transaction — an instance is never started
    without its record: with the row unwritable the start is refused (500)
    and no instance exists."""
    await api.deploy(people.root, approval())
    async with api.db.begin() as conn:
        await conn.execute(text("DROP TABLE operation_audit"))
    response = await api.post(
        "/instances", people.ann, {"definitionKey": "leave", "form": {"days": 1}}
    )
    assert response.status_code == 500 and response.json()["code"] == "internal_error"
    async with api.db.read() as conn:
        count = (await conn.execute(text("SELECT count(*) FROM workflow_instances"))).scalar_one()
    assert count == 0


class BrokenEngine(Engine):
    async def cancel(
        self,
        instance_id: int,
        *,
        actor: str,
        reason: str | None = None,
        audit: AuditEntry | None = None,
    ) -> None:
        raise RuntimeError("secret connection string postgres://u:p@db")


async def test_unexpected_error_is_500_without_trace(
    api: Api, people: People, db: Database, clock: ManualClock
) -> None:
    await api.deploy(people.root, approval())
    instance = await api.start(people.ann)
    app = create_app(db, engine=BrokenEngine(db, clock))
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
        response = await client.post(
            f"/api/workflows/instances/{instance['id']}/cancel", headers=people.ops, json={}
        )
        assert response.status_code == 500
        assert response.json() == {
            "code": "internal_error",
            "message": "internal error",
            "field": None,
        }
        assert "secret" not in response.text and "Traceback" not in response.text
        # the server keeps serving
        assert (await client.get("/api/workflows/me", headers=people.ops)).status_code == 200
    [row] = [r for r in await api.rows(operation_audit) if r["action"] == "instance.cancel"]
    assert row["result"] == "failed" and row["detail"]["code"] == "internal_error"


async def test_unknown_route_and_method(api: Api, people: People) -> None:
    missing = await api.get("/nothing-here", people.root)
    assert missing.status_code == 404 and missing.json()["code"] == "not_found"
    wrong = await api.client.delete("/api/workflows/me", headers=people.root)
    assert wrong.status_code == 405 and wrong.json()["code"] == "method_not_allowed"
