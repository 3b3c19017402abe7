"""Issue 17 item 13 (SPEC X-3, X-4, C-9): an SSRF refusal counts as nothing
for a connector's circuit breaker (it used to count as a success, resetting
the failure count and closing a half-open circuit); an allow-listed host
name does not admit link-local or metadata addresses it resolves to (those
need an allow-list entry by address); attachment files orphaned by a crash
between file write and row commit are swept (both backends)."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import pytest

from flowledger.clock import ManualClock
from flowledger.compensation.attachments import store, sweep_orphans
from flowledger.db.compensation_schema import workflow_compensation_logs as logs
from flowledger.db.compensation_schema import workflow_compensations as tickets
from flowledger.db.database import Database
from flowledger.db.engine_schema import workflow_definitions, workflow_instances
from flowledger.outbound.connector_config import BreakerSettings
from flowledger.outbound.connector_guards import ConnectorGuards, OpenedState, breaker_call
from flowledger.outbound.job_calls import CallFailed
from flowledger.outbound.ssrf import AllowList, OutboundRefused, check_target, parse_target
from tests.outbound.fakes import TableResolver

# ------------------------------------------------------------ breaker


async def _outcome(guards: ConnectorGuards, settings: BreakerSettings, exc: Exception) -> None:
    breaker = await guards.breaker(7, settings)
    with pytest.raises(type(exc)):
        async with breaker_call(breaker):
            raise exc


def _failed() -> CallFailed:
    return CallFailed("HTTP 503 from target")


async def test_ssrf_refusal_does_not_reset_the_failure_count_item13() -> None:
    guards, settings = ConnectorGuards(), BreakerSettings(2, 60.0)
    await _outcome(guards, settings, _failed())
    await _outcome(guards, settings, OutboundRefused("http://10.0.0.1", "a private address"))
    await _outcome(guards, settings, _failed())  # the second failure in a row opens it
    breaker = await guards.breaker(7, settings)
    with pytest.raises(OpenedState):
        async with breaker_call(breaker):
            pass


async def test_ssrf_refusal_does_not_close_a_half_open_circuit_item13() -> None:
    guards, settings = ConnectorGuards(), BreakerSettings(1, 0.05)
    await _outcome(guards, settings, _failed())  # open
    await asyncio.sleep(0.1)  # half-open: the next call is the trial
    await _outcome(guards, settings, OutboundRefused("http://10.0.0.1", "a private address"))
    await _outcome(guards, settings, _failed())  # a failing trial reopens at once
    breaker = await guards.breaker(7, settings)
    with pytest.raises(OpenedState):
        async with breaker_call(breaker):
            pass


# ------------------------------------------------------------ allow-list

DNS = {
    "erp.internal": ["10.9.9.9"],
    "meta.internal": ["169.254.169.254"],
    "link.internal": ["169.254.10.10"],
}


@pytest.mark.parametrize(
    ("allow", "url", "admitted"),
    [
        ("erp.internal:443", "https://erp.internal/", True),
        ("meta.internal:80", "http://meta.internal/", False),  # metadata behind a name
        ("link.internal:80", "http://link.internal/", False),  # link-local behind a name
        ("link.internal:80, 169.254.10.10:80", "http://link.internal/", True),  # by address
        ("link.internal:80, 169.254.0.0/16", "http://link.internal/", True),
        ("meta.internal:80, 169.254.0.0/16", "http://meta.internal/", False),
        ("meta.internal:80, 169.254.169.254:80", "http://meta.internal/", True),
    ],
)
async def test_allow_listed_name_does_not_admit_metadata_or_link_local_item13(
    allow: str, url: str, admitted: bool
) -> None:
    check = check_target(parse_target(url), AllowList.parse(allow), resolver=TableResolver(DNS))
    if admitted:
        assert (await check).address is not None
    else:
        with pytest.raises(OutboundRefused):
            await check


# ------------------------------------------------------------ orphan sweep


async def _history_row(db: Database, clock: ManualClock, stored_name: str) -> None:
    now = clock.now()
    async with db.begin() as conn:
        definition = (
            await conn.execute(
                workflow_definitions.insert()
                .values(tenant_id="default", key="k", version=1, name="k", source={},
                        deployed_by="t", deployed_at=now)
                .returning(workflow_definitions.c.id)
            )
        ).scalar_one()  # fmt: skip
        instance = (
            await conn.execute(
                workflow_instances.insert()
                .values(tenant_id="default", definition_id=definition, definition_key="k",
                        definition_version=1, snapshot={}, status="suspended", form_data={},
                        initiator="t", trace_id="tr", created_at=now, updated_at=now)
                .returning(workflow_instances.c.id)
            )
        ).scalar_one()  # fmt: skip
        ticket = (
            await conn.execute(
                tickets.insert()
                .values(tenant_id="default", instance_id=instance, failed_node_key="n",
                        node_key="n", kind="manual", status="pending",
                        compensation_action_status="none", created_by="t",
                        created_at=now, updated_at=now)
                .returning(tickets.c.id)
            )
        ).scalar_one()  # fmt: skip
        await conn.execute(
            logs.insert().values(
                compensation_id=ticket, kind="attachment", actor="t", stored_name=stored_name,
                original_name="a.txt", content_type="text/plain", size_bytes=2, created_at=now,
            )
        )  # fmt: skip


def _age(path: Path, seconds: float) -> None:
    old = time.time() - seconds
    os.utime(path, (old, old))


async def test_sweep_removes_only_old_unreferenced_files_item13(
    db: Database, clock: ManualClock, tmp_path: Path
) -> None:
    folder = str(tmp_path / "attachments")
    kept = await store(folder, b"ok", "text/plain")
    orphan = await store(folder, b"crash", "text/plain")
    young = await store(folder, b"uploading", "text/plain")
    await _history_row(db, clock, kept)
    part = Path(folder) / f".{'a' * 32}.txt.part"
    part.write_bytes(b"half")
    foreign = Path(folder) / "README"
    foreign.write_text("not ours")
    for name in (kept, orphan, part.name, foreign.name):
        _age(Path(folder) / name, 7200)
    async with db.read() as conn:
        report = await sweep_orphans(conn, folder, min_age_s=3600)
    assert sorted(report.removed) == sorted([orphan, part.name])
    left = sorted(os.listdir(folder))
    assert left == sorted([kept, young, foreign.name])
