"""Failure clusters (SPEC L-24): 1,000 dead jobs with five causes whose
texts differ only in ids, numbers, URLs and times fall into exactly five
reason clusters with the right counts, and each cluster's filter selects
exactly its jobs through the job list (what "replay this cluster" uses).
Grouping by type, instance and traceId; samples, times, tenants. Both
backends."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from typing import Any

import pytest

from flowledger.clock import ManualClock
from flowledger.db.database import Database
from flowledger.errors import FlowledgerError
from flowledger.ledger.fingerprint import fingerprint
from flowledger.ops.jobs.failure_clusters import failure_clusters
from flowledger.ops.jobs.filters import JobFilter
from flowledger.ops.jobs.queries import list_jobs
from tests.ops.rows import add_job, add_jobs, job_row

CAUSES = [  # (how many, the error of member i)
    (
        400,
        lambda i: f"Timeout after {1000 + i} ms calling https://erp.example/orders/{i}?try={i % 3}",
    ),
    (250, lambda i: f"HTTP 502 from https://hooks.acme.test/in/{uuid.UUID(int=i)}"),
    (200, lambda i: f"order {90000 + i} not found in ledger 'L-{i % 17}'"),
    (100, lambda i: f"connection refused to 10.0.{i % 250}.{i % 7}:5432"),
    (50, lambda i: f"invoice {i:024x} rejected at 2026-01-{1 + i % 28:02d}T10:{i % 60:02d}:00Z"),
]


async def _fill(db: Database, now: datetime) -> dict[str, list[int]]:
    """1,000 dead jobs (every fifth failed) across the five causes, updated one
    second apart, plus same-cause jobs that must not be clustered."""
    rows = []
    n = 0
    for count, error in CAUSES:
        for _ in range(count):
            n += 1
            status = "failed" if n % 5 == 0 else "dead"
            at = now - timedelta(seconds=n)
            rows.append(job_row(now, status=status, last_error=error(n), updated_at=at))
    for status in ("pending", "succeeded", "canceled"):  # in retry, done, skipped
        rows.append(job_row(now, status=status, last_error=CAUSES[0][1](7)))
    rows.append(job_row(now, status="dead", last_error=CAUSES[0][1](8), tenant_id="globex"))
    await add_jobs(db, rows)
    members: dict[str, list[int]] = {}
    for item in await _items(db, JobFilter(statuses=("dead", "failed"), tenants=("default",))):
        members.setdefault(item["lastErrorFingerprint"], []).append(item["id"])
    return members


def _to_filter(body: dict[str, Any], tenants: tuple[str, ...] | None) -> JobFilter:
    return JobFilter(
        types=tuple(body["types"]) if "types" in body else None,
        statuses=tuple(body["statuses"]),
        instance_id=body.get("instanceId"),
        trace_id=body.get("traceId"),
        keyword=body.get("keyword"),
        fingerprint=body.get("fingerprint"),
        tenants=tenants,
    )


async def _items(db: Database, flt: JobFilter) -> list[dict[str, Any]]:
    """Every job the filter selects, page by page."""
    items: list[dict[str, Any]] = []
    cursor = None
    while True:
        page = await list_jobs(db, flt, limit=200, cursor=cursor)
        items += page["items"]
        cursor = page["next"]
        if cursor is None:
            return items


async def _selected(db: Database, flt: JobFilter) -> list[int]:
    return [item["id"] for item in await _items(db, flt)]


async def test_five_causes_make_five_clusters_L24(db: Database, clock: ManualClock) -> None:
    now = clock.now()
    members = await _fill(db, now)
    assert len(members) == 5  # the texts differ, the fingerprints do not
    mine = ("default",)
    clusters = await failure_clusters(db, JobFilter(tenants=mine), samples=2)
    assert [c["count"] for c in clusters] == [400, 250, 200, 100, 50]
    expected_fps = [fingerprint(error(1)) for _, error in CAUSES]
    assert [c["key"] for c in clusters] == expected_fps
    timeout = clusters[0]
    assert timeout["id"] == f"reason:{expected_fps[0]}" and timeout["by"] == "reason"
    assert timeout["pattern"] == "Timeout after <n> ms calling https://erp.example/<path>"
    assert timeout["filter"] == {"fingerprint": expected_fps[0], "statuses": ["dead", "failed"]}
    assert timeout["types"] == [{"type": "webhook_delivery", "count": 400}]
    # updated one second apart: member 1 is the newest, member 400 the oldest
    assert timeout["lastSeenAt"] == now - timedelta(seconds=1)
    assert timeout["firstSeenAt"] == now - timedelta(seconds=400)
    assert [s["updatedAt"] for s in timeout["samples"]] == [
        now - timedelta(seconds=1),
        now - timedelta(seconds=2),
    ]
    assert timeout["samples"][0]["error"] == CAUSES[0][1](1)
    assert {"jobId", "type", "status", "instanceId", "traceId"} <= timeout["samples"][0].keys()
    for cluster in clusters:  # "replay this cluster" selects exactly its jobs
        selected = await _selected(db, _to_filter(cluster["filter"], mine))
        assert sorted(selected) == sorted(members[cluster["key"]])
        assert len(selected) == cluster["count"]


async def test_cluster_filter_keeps_the_callers_conditions_L24(
    db: Database, clock: ManualClock
) -> None:
    now = clock.now()
    await _fill(db, now)
    flt = JobFilter(statuses=("dead",), keyword="timeout", tenants=("default",))
    (cluster,) = await failure_clusters(db, flt, samples=0)
    assert cluster["count"] == 320  # 400 minus every fifth (failed)
    assert cluster["samples"] == [] and cluster["pattern"] is not None
    assert cluster["filter"] == {
        "statuses": ["dead"],
        "keyword": "timeout",
        "fingerprint": fingerprint(CAUSES[0][1](1)),
    }
    assert len(await _selected(db, _to_filter(cluster["filter"], ("default",)))) == 320
    assert await failure_clusters(db, JobFilter(statuses=("pending", "succeeded"))) == []
    everyone = await failure_clusters(db, JobFilter(), limit=1)
    assert [c["count"] for c in everyone] == [401]  # the other tenant's job too


async def test_clusters_by_type_instance_and_trace_L24(db: Database, clock: ManualClock) -> None:
    now = clock.now()
    for i in range(6):
        await add_job(
            db,
            now,
            status="dead" if i % 2 else "failed",
            type="webhook_delivery" if i < 4 else "delay_wake",
            instance_id=None if i == 5 else 100 + i % 2,
            trace_id=f"t-{i % 3}",
            last_error=None if i == 0 else f"boom {i}",
            updated_at=now + timedelta(seconds=i),
        )
    await add_job(db, now, status="pending", type="event_dispatch", instance_id=100)

    by_type = await failure_clusters(db, JobFilter(), by="type")
    assert [(c["key"], c["count"]) for c in by_type] == [("webhook_delivery", 4), ("delay_wake", 2)]
    assert by_type[0]["filter"] == {"statuses": ["dead", "failed"], "types": ["webhook_delivery"]}
    assert by_type[0]["pattern"] == "boom <n>" and by_type[0]["samples"][0]["jobId"] > 0

    by_instance = await failure_clusters(db, JobFilter(), by="instance")
    counts = {c["key"]: c["count"] for c in by_instance}
    assert counts == {100: 3, 101: 2, None: 1}
    assert next(c for c in by_instance if c["key"] is None)["filter"] is None
    assert next(c for c in by_instance if c["key"] == 101)["filter"]["instanceId"] == 101

    by_trace = await failure_clusters(db, JobFilter(), by="trace", samples=5)
    assert {c["key"]: c["count"] for c in by_trace} == {"t-0": 2, "t-1": 2, "t-2": 2}
    t0 = next(c for c in by_trace if c["key"] == "t-0")
    assert [s["updatedAt"] for s in t0["samples"]] == [
        now + timedelta(seconds=3),
        now + timedelta(seconds=0),
    ]
    by_reason = await failure_clusters(db, JobFilter(), by="reason")
    assert [c["count"] for c in by_reason] == [5, 1]  # "boom <n>" and no error at all
    assert by_reason[1]["key"] is None and by_reason[1]["filter"] is None


@pytest.mark.parametrize(
    ("kw", "field"),
    [({"by": "colour"}, "by"), ({"limit": 0}, "limit"), ({"samples": 21}, "samples")],
)
async def test_bad_arguments_name_the_field(db: Database, kw: dict[str, Any], field: str) -> None:
    with pytest.raises(FlowledgerError) as refused:
        await failure_clusters(db, JobFilter(), **kw)
    assert refused.value.field == field
