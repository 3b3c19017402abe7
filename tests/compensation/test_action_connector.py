"""A connector compensation action (SPEC C-4, X-3): the call goes through
the tenant's connector — its base URL, its auth, its call audit — with the
rendered relative path, against a real receiver."""

from __future__ import annotations

from flowledger.clock import ManualClock
from flowledger.db.database import Database
from flowledger.engine import Engine
from flowledger.settings import Settings
from tests.compensation.flows import deploy, failed_instance, repair_at, ticket
from tests.integration.engine_helpers import jobs, run_due_jobs
from tests.outbound.receivers import Receiver
from tests.outbound.test_connectors_helpers import call_rows, make_connector, secret_key

__all__ = ["secret_key"]  # the fixture, imported for pytest


async def test_connector_action_uses_the_connectors_auth_and_audit_C4_X3(
    db: Database,
    engine: Engine,
    clock: ManualClock,
    receiver: Receiver,
    outbound_env: Settings,
    secret_key: str,
) -> None:
    await make_connector(
        db, clock, f"{receiver.url}/api", tenant="default", auth_kind="bearer", secret="t0ken"
    )
    await deploy(engine)
    iid = await failed_instance(engine, db, clock, form={"vendor": "a/b", "amount": 5})
    action = {
        "type": "connector",
        "connectorId": "erp",
        "url": "/orders/{{form.vendor}}",
        "httpMethod": "DELETE",
        "headers": {"X-Instance": "{{instanceId}}"},
    }
    ticket_id = await repair_at(engine, iid, kind="compensate", action=action, enqueue=True)
    assert ticket_id is not None
    await run_due_jobs(db, clock)
    [request] = receiver.requests
    assert (request.method, request.path) == ("DELETE", "/api/orders/a%2Fb")
    assert request.headers["authorization"] == "Bearer t0ken"
    assert request.headers["x-instance"] == str(iid)
    [job] = await jobs(db, iid, type="compensation_action")
    assert job["status"] == "succeeded" and job["result"]["status"] == 200
    [call] = await call_rows(db)
    assert call["outcome"] == "ok"
    assert (await ticket(db, ticket_id))["compensation_action_status"] == "succeeded"


async def test_unknown_connector_fails_the_action_permanently_C4(
    db: Database, engine: Engine, clock: ManualClock, outbound_env: Settings
) -> None:
    await deploy(engine)
    iid = await failed_instance(engine, db, clock)
    action = {"type": "connector", "connectorId": "nope", "url": "/x"}
    ticket_id = await repair_at(engine, iid, kind="compensate", action=action, enqueue=True)
    assert ticket_id is not None
    await run_due_jobs(db, clock)
    [job] = await jobs(db, iid, type="compensation_action")
    assert (job["status"], job["attempts"], job["last_error_code"]) == (
        "dead",
        1,
        "connector_not_found",
    )
    assert (await ticket(db, ticket_id))["compensation_action_status"] == "failed"
