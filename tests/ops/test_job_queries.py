"""Job ledger queries (SPEC L-25, A-3): the shared filter on the list and
the summary, keyset paging that stays stable while jobs arrive, one job with
the attempts of two generations (written by the real ledger), the chain of a
traceId across two instances and its diagnostic bundle — each limited to the
caller's tenants. Both backends."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from flowledger.clock import ManualClock
from flowledger.db.database import Database
from flowledger.errors import NotFoundError
from flowledger.ledger.fingerprint import fingerprint
from flowledger.ledger.models import Outcome
from flowledger.ops.diagnostics.bundle import chain_bundle
from flowledger.ops.jobs.filters import JobFilter
from flowledger.ops.jobs.queries import (
    CursorInvalid,
    job_chain,
    job_detail,
    job_summary,
    list_jobs,
)
from tests.integration.ledger_helpers import add_job as enqueue_job
from tests.integration.ledger_helpers import claim_one, settle_single
from tests.ledger_access import ledger_of
from tests.ops.rows import APPROVAL, add_execution, add_job
from tests.runtime_support import default_engine

MIN = timedelta(minutes=1)


async def _ids(db: Database, flt: JobFilter, **kw: object) -> list[int]:
    page = await list_jobs(db, flt, limit=200, **kw)  # type: ignore[arg-type]
    return [job["id"] for job in page["items"]]


async def test_list_filters_L25(db: Database, clock: ManualClock) -> None:
    now = clock.now()
    old = now - timedelta(days=2)
    timeout = "Timeout after 30000 ms calling https://erp.example/orders/17"
    hook_dead = await add_job(db, old, status="dead", last_error=timeout, instance_id=7)
    hook_failed = await add_job(db, now, status="failed", last_error="HTTP 404 from erp")
    wake = await add_job(db, now, type="delay_wake", pool="workflow-ledger", trace_id="t-1")
    wake_dead = await add_job(
        db, now, type="delay_wake", status="dead", last_error="TIMEOUT after 5 ms", trace_id="t-1"
    )
    replayed = await add_job(db, now, replay_batch_id="rb-1", instance_id=7)
    other_tenant = await add_job(db, now, tenant_id="globex", status="dead")
    system_job = await add_job(db, now, tenant_id=None)

    everyone = await _ids(db, JobFilter())
    assert everyone == [system_job, other_tenant, replayed, wake_dead, wake, hook_failed, hook_dead]
    mine = ("default",)
    assert await _ids(db, JobFilter(tenants=mine)) == [
        replayed,
        wake_dead,
        wake,
        hook_failed,
        hook_dead,
    ]
    assert await _ids(db, JobFilter(tenants=())) == []
    cases: list[tuple[JobFilter, list[int]]] = [
        (JobFilter(types=("delay_wake",)), [wake_dead, wake]),
        (JobFilter(statuses=("dead",)), [wake_dead, hook_dead]),
        (
            JobFilter(statuses=("dead", "failed"), types=("webhook_delivery",)),
            [hook_failed, hook_dead],
        ),
        (JobFilter(instance_id=7), [replayed, hook_dead]),
        (JobFilter(trace_id="t-1"), [wake_dead, wake]),
        (JobFilter(keyword="timeout"), [wake_dead, hook_dead]),  # case-insensitive
        (JobFilter(keyword="WAKE"), [wake_dead, wake]),  # the type matches too
        (JobFilter(fingerprint=fingerprint(timeout)), [hook_dead]),
        (JobFilter(replay_batch_id="rb-1"), [replayed]),
        (JobFilter(enqueued_before=now - timedelta(days=1)), [hook_dead]),
    ]
    for flt, expected in cases:
        assert await _ids(db, replace(flt, tenants=mine)) == expected, flt


async def test_list_items_are_camel_case_without_secrets_L25(
    db: Database, clock: ManualClock
) -> None:
    now = clock.now()
    job_id = await add_job(
        db, now, status="dead", last_error="x" * 2000, lease_token="secret", payload={"a": 1}
    )
    (item,) = (await list_jobs(db, JobFilter()))["items"]
    assert item["id"] == job_id and item["tenant"] == "default" and item["runAt"] == now
    assert item["lastErrorFingerprint"] == fingerprint("x" * 2000)
    assert len(item["lastError"]) == 501  # the start of it; the detail has it all
    assert not {"leaseToken", "payload", "result", "tenant_id", "run_at"} & item.keys()


async def test_keyset_paging_is_stable_while_jobs_arrive_L25(
    db: Database, clock: ManualClock
) -> None:
    now = clock.now()
    ids = [await add_job(db, now, status="dead") for _ in range(7)]
    await add_job(db, now, status="pending")  # filtered out
    flt = JobFilter(statuses=("dead",))
    first = await list_jobs(db, flt, limit=3)
    assert [j["id"] for j in first["items"]] == ids[:-4:-1]
    await add_job(db, now, status="dead")  # a newer job does not shift the next page
    second = await list_jobs(db, flt, limit=3, cursor=first["next"])
    assert [j["id"] for j in second["items"]] == ids[3:0:-1]
    third = await list_jobs(db, flt, limit=3, cursor=second["next"])
    assert [j["id"] for j in third["items"]] == ids[:1]
    assert third["next"] is None
    exact = await list_jobs(db, flt, limit=8)
    assert len(exact["items"]) == 8 and exact["next"] is None


@pytest.mark.parametrize(
    "cursor",
    ["nope", "WyJ4Il0", "WzEsMl0", "Wy0xXQ", "W3RydWVd", "e30"],
    ids=["garbage", "string", "two-values", "negative", "bool", "object"],
)
async def test_bad_cursor_is_refused_L25(db: Database, cursor: str) -> None:
    assert (await list_jobs(db, JobFilter(), cursor="WzFd"))["items"] == []  # [1] is fine
    with pytest.raises(CursorInvalid) as refused:
        await list_jobs(db, JobFilter(), cursor=cursor)
    assert refused.value.field == "cursor"


async def test_summary_counts_by_type_and_status_L25(db: Database, clock: ManualClock) -> None:
    now = clock.now()
    for job_type, status, n in [
        ("webhook_delivery", "dead", 3),
        ("webhook_delivery", "succeeded", 2),
        ("delay_wake", "pending", 1),
        ("delay_wake", "dead", 1),
    ]:
        for _ in range(n):
            await add_job(db, now, type=job_type, status=status)
    await add_job(db, now, status="dead", tenant_id="globex")

    summary = await job_summary(db, JobFilter(tenants=("default",)))
    zero = dict.fromkeys(
        ["pending", "running", "paused", "succeeded", "failed", "dead", "canceled"], 0
    )
    assert summary == {
        "total": 7,
        "byStatus": {**zero, "dead": 4, "succeeded": 2, "pending": 1},
        "estimated": False,  # a handful of rows: every figure counted
        "estimatedStatuses": [],
        "byType": [
            {
                "type": "delay_wake",
                "total": 2,
                "byStatus": {**zero, "pending": 1, "dead": 1},
                "estimatedStatuses": [],
            },
            {
                "type": "webhook_delivery",
                "total": 5,
                "byStatus": {**zero, "dead": 3, "succeeded": 2},
                "estimatedStatuses": [],
            },
        ],
    }
    dead = await job_summary(db, JobFilter(statuses=("dead",)))
    assert dead["total"] == 5 and dead["byStatus"]["dead"] == 5


async def test_detail_has_every_attempt_of_every_generation_L25(
    db: Database, clock: ManualClock
) -> None:
    job_id = await enqueue_job(db, clock.now(), tenant_id="default", payload={"n": 1})
    first = await claim_one(db, clock.now())
    clock.advance(seconds=2)
    await settle_single(db, first, Outcome.dead("upstream 502 for order 991"), clock.now())
    clock.advance(seconds=60)
    async with db.begin() as conn:
        await ledger_of(conn).job_retry(conn, job_id, now=clock.now())
    clock.advance(seconds=5)
    second = await claim_one(db, clock.now())
    clock.advance(seconds=1)
    await settle_single(db, second, Outcome.success({"ok": True}), clock.now())

    job = await job_detail(db, job_id, tenants=("default",))
    assert (job["status"], job["generation"], job["payload"], job["result"]) == (
        "succeeded",
        2,
        {"n": 1},
        {"ok": True},
    )
    assert "leaseToken" not in job
    runs = job["executions"]
    assert [(r["generation"], r["attempt"], r["status"]) for r in runs] == [
        (1, 1, "failed"),
        (2, 1, "succeeded"),
    ]
    assert runs[0]["error"] == "upstream 502 for order 991" and runs[0]["durationMs"] == 2000
    assert runs[1]["queueDelayMs"] == 5000.0 and runs[1]["jobId"] == job_id


async def test_detail_is_not_found_across_tenants_A3(db: Database, clock: ManualClock) -> None:
    now = clock.now()
    theirs = await add_job(db, now, tenant_id="globex")
    system = await add_job(db, now, tenant_id=None)
    assert (await job_detail(db, theirs, tenants=None))["tenant"] == "globex"
    for job_id in (theirs, system, 10**9):
        with pytest.raises(NotFoundError):
            await job_detail(db, job_id, tenants=("default",))


async def _two_instance_chain(db: Database, clock: ManualClock) -> tuple[int, int, list[int]]:
    engine = default_engine(db, clock)
    await engine.deploy(APPROVAL, actor="root")
    await engine.deploy(APPROVAL, actor="root", tenant="globex")
    parent = await engine.start("leave", form={}, initiator="ann")
    child = await engine.start("leave", form={}, initiator="ann")
    foreign = await engine.start("leave", form={}, initiator="gus", tenant="globex")
    now = clock.now()
    jobs = [
        await add_job(db, now, trace_id="chain-1", instance_id=parent, type="trigger_dispatch"),
        await add_job(db, now + MIN, trace_id="chain-1", instance_id=child, status="dead"),
        await add_job(
            db, now + 2 * MIN, trace_id="chain-1", instance_id=foreign, tenant_id="globex"
        ),
    ]
    await add_job(db, now, trace_id="chain-2", instance_id=parent)
    for job_id in jobs[:2]:
        await add_execution(db, job_id, scheduled_at=now, started_at=now + timedelta(seconds=3))
    await add_execution(
        db, jobs[1], scheduled_at=now, started_at=now + MIN, attempt=2, status="failed"
    )
    return parent, child, jobs


async def test_chain_spans_instances_within_tenants_L25(db: Database, clock: ManualClock) -> None:
    parent, child, jobs = await _two_instance_chain(db, clock)
    chain = await job_chain(db, "chain-1", tenants=("default",))
    assert [j["id"] for j in chain["jobs"]] == jobs[:2]
    assert chain["instanceIds"] == sorted([parent, child])
    assert [len(j["executions"]) for j in chain["jobs"]] == [1, 2]
    assert [e["attempt"] for e in chain["jobs"][1]["executions"]] == [1, 2]
    assert chain["traceId"] == "chain-1" and chain["truncated"] is False
    everyone = await job_chain(db, "chain-1", tenants=None)
    assert [j["id"] for j in everyone["jobs"]] == jobs
    for trace, tenants in (("nowhere", None), ("chain-1", ("initech",))):
        with pytest.raises(NotFoundError):
            await job_chain(db, trace, tenants=tenants)


async def test_bundle_has_chain_attempts_and_instance_snapshots_L25(
    db: Database, clock: ManualClock
) -> None:
    parent, child, jobs = await _two_instance_chain(db, clock)
    bundle = await chain_bundle(db, "chain-1", tenants=("default",), now=clock.now())
    assert bundle["kind"] == "flowledger.chain-diagnostic-bundle"
    assert bundle["generatedAt"] == clock.now() and bundle["traceId"] == "chain-1"
    assert [j["id"] for j in bundle["jobs"]] == jobs[:2]
    assert bundle["jobs"][1]["executions"][1]["status"] == "failed"
    snapshots = {i["id"]: i for i in bundle["instances"]}
    assert set(snapshots) == {parent, child}  # the other tenant's instance is left out
    snap = snapshots[parent]
    assert snap["tenant"] == "default" and snap["status"] == "running" and "snapshot" not in snap
    assert [(t["nodeKey"], t["status"]) for t in snap["tasks"]] == [("manager", "pending")]
    assert [t["state"] for t in snap["tokens"]] == ["active"]
    assert snap["trace"] and snap["trace"][0]["event"] == "instance_started"
    full = await chain_bundle(db, "chain-1", tenants=None)
    assert len(full["instances"]) == 3 and full["generatedAt"] is not None
