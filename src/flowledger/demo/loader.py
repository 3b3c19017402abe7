"""Loads the demo: deploys :mod:`flowledger.demo.definitions` and drives a
mix of instances through the engine's Python API."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from sqlalchemy import select

from flowledger.access.permissions import ENGINE_OPERATE, INSTANCE_MONITOR
from flowledger.access.tokens import create_user
from flowledger.compensation.admins import ADMIN_ROLE
from flowledger.db.engine_schema import users, workflow_tasks
from flowledger.demo.definitions import ALL
from flowledger.demo.health_cases import load_health_cases
from flowledger.engine import Engine

DEMO_USERS = ["alice", "bob", "carol", "dave", "erin", "frank"]
OPS_ADMIN = "olivia"


@dataclass
class DemoReport:
    definitions: int = 0
    instances: list[int] = field(default_factory=list)


async def _pending(engine: Engine, instance_id: int, node_key: str) -> list[int]:
    async with engine.db.read() as conn:
        return list(
            (
                await conn.execute(
                    select(workflow_tasks.c.id).where(
                        workflow_tasks.c.instance_id == instance_id,
                        workflow_tasks.c.node_key == node_key,
                        workflow_tasks.c.status == "pending",
                    )
                )
            ).scalars()
        )


async def _approve_at(engine: Engine, instance_id: int, node_key: str, actor: str) -> None:
    for task_id in await _pending(engine, instance_id, node_key):
        await engine.approve(task_id, actor=actor)


async def _ensure_ops_admin(engine: Engine) -> None:
    """The demo's repair administrator (SPEC C-3: role ``workflow_admin``)."""
    async with engine.db.begin() as conn:
        found = (await conn.execute(select(users.c.id).where(users.c.id == OPS_ADMIN))).first()
        if found is None:
            await create_user(
                conn,
                OPS_ADMIN,
                display_name="Olivia (operations)",
                roles=[ADMIN_ROLE],
                permissions=[ENGINE_OPERATE, INSTANCE_MONITOR],
                now=engine.clock.now(),
            )


async def load_demo(engine: Engine, *, progress: Callable[[str], None] | None = None) -> DemoReport:
    say = progress or (lambda _msg: None)
    report = DemoReport()
    for source in ALL:
        await engine.deploy(source, actor="demo")
        report.definitions += 1
    say(f"deployed {report.definitions} definitions")

    started = report.instances.append
    vendors = ["Acme", "Globex", "Initech", "Umbrella", "Hooli", "Stark", "Wayne", "Tyrell"]
    for i, vendor in enumerate(vendors):
        iid = await engine.start(
            "purchase",
            form={"amount": 2_500 * (i + 1), "vendor": vendor, "reason": "demo"},
            initiator="dave",
        )
        started(iid)
        if i % 4 == 0:
            await _approve_at(engine, iid, "manager", "alice")
            await _approve_at(engine, iid, "cfo", "bob")
        elif i % 4 == 1:
            for task_id in await _pending(engine, iid, "manager"):
                await engine.reject(task_id, actor="alice", comment="budget frozen")
        elif i % 4 == 2:
            await _approve_at(engine, iid, "manager", "alice")
    withdrawn = await engine.start(
        "purchase", form={"amount": 300, "vendor": "Soylent"}, initiator="erin"
    )
    await engine.withdraw(withdrawn, actor="erin", reason="ordered by mistake")
    started(withdrawn)
    say("purchases: approved, rejected, withdrawn and running")

    for name in ["alice", "bob", "carol"]:
        iid = await engine.start("onboarding", form={"employee": name}, initiator="erin")
        started(iid)
        for task_id in await _pending(engine, iid, "it") + await _pending(engine, iid, "hr"):
            await engine.handle(task_id, actor="dave")
    suspended = await engine.start("onboarding", form={"employee": "frank"}, initiator="erin")
    await engine.suspend(suspended, actor="admin", reason="paperwork on hold")
    started(suspended)
    say("onboarding: waiting on delays, one suspended")

    for vendor in ["Acme", "Globex", "Initech"]:
        started(await engine.start("vendor_onboarding", form={"vendor": vendor}, initiator="carol"))
    say("vendor onboarding: waiting on subprocesses")

    for amount, category in [(120, "travel"), (900, "other"), (4_000, "legal")]:
        iid = await engine.start(
            "expense", form={"amount": amount, "category": category}, initiator="frank"
        )
        started(iid)
        await _approve_at(engine, iid, "manager", "alice")
    say("expenses: inclusive branches partly done")

    for order in ["SO-1001", "SO-1002"]:
        started(await engine.start("erp_sync", form={"orderId": order}, initiator="bob"))
    await _ensure_ops_admin(engine)
    started(await engine.start("invoice_push", form={"invoiceId": "INV-7"}, initiator="bob"))
    started(await engine.start("routing_gap", form={"region": "latam"}, initiator="bob"))
    started(await engine.start("routing_gap", form={"region": "emea"}, initiator="bob"))
    say(
        "broken on purpose: refused trigger calls (one under a notify failure policy, "
        "with a compensation ticket for ops) and an exclusive gateway without default"
    )
    report.instances.extend(await load_health_cases(engine))
    say("health cases: one instance per inspection rule, backdated two hours")
    return report
