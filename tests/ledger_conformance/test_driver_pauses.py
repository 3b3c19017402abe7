"""Paused scopes in every claim (issue 31 item 3), run against each ledger
driver (see ``conftest.py``): a paused job type's due jobs are not claimed
while the pool's other types are; a paused pool yields nothing; the paused
jobs stay pending with their ``run_at`` and attempts unchanged and do not
count as the pool's next due time; once resumed they are claimed."""

from __future__ import annotations

from flowledger.clock import ManualClock
from flowledger.db.database import Database
from flowledger.ledger.driver import LedgerDriver
from flowledger.ledger.models import JobSpec
from flowledger.ledger.pauses import pause_scope, resume_scope
from flowledger.ledger.types import JobType
from flowledger.states import JobTransition, Pool
from tests.ledger_conformance.support import CF_TYPE, checked, in_tx, job

LEDGER = Pool.LEDGER.value
OTHER = JobType("cf_ledger_other", LEDGER, max_attempts=3)
CLAIM_TELLS_NEXT_DUE = {"sqlite-fast", "postgresql", "postgresql-fast"}


async def _insert(driver: LedgerDriver, db: Database, clock: ManualClock, **spec: object) -> int:
    spec.setdefault("type", CF_TYPE)
    result = await in_tx(db, lambda c: driver.job_insert(c, JobSpec(**spec), now=clock.now()))  # type: ignore[arg-type]
    return result.job_id


async def _claim(driver: LedgerDriver, db: Database, clock: ManualClock, order: str) -> list[int]:
    batch = await checked(
        db,
        JobTransition.CLAIM,
        driver.jobs_claim(db, pool=LEDGER, limit=10, node_id="n1", now=clock.now(), order=order),
    )
    return sorted(c.id for c in batch)


async def test_a_paused_type_is_skipped_and_claimed_once_resumed(
    driver: LedgerDriver, driver_kind: str, db: Database, clock: ManualClock
) -> None:
    paused = [await _insert(driver, db, clock, priority=1) for _ in range(3)]  # first in order
    other = await _insert(driver, db, clock, type=OTHER, priority=50)
    before = {i: await job(db, i) for i in paused}
    await in_tx(
        db,
        lambda c: pause_scope(c, "job_type", CF_TYPE.name, by="ops", reason="r", now=clock.now()),
    )
    for order in ("priority", "due"):
        assert await _claim(driver, db, clock, order) == ([other] if order == "priority" else [])
    for i in paused:
        row = await job(db, i)
        assert (row["status"], row["run_at"], row["attempts"]) == (
            "pending",
            before[i]["run_at"],
            0,
        )
    # the paused jobs are not the pool's next due time (the claimer would spin)
    assert await driver.jobs_next_due(db, pool=LEDGER) is None
    batch = await driver.jobs_claim_batch(db, pool=LEDGER, limit=10, node_id="n1", now=clock.now())
    assert batch.jobs == []
    if driver_kind in CLAIM_TELLS_NEXT_DUE:
        assert batch.next_due is None
    await in_tx(db, lambda c: resume_scope(c, "job_type", CF_TYPE.name))
    assert await _claim(driver, db, clock, "priority") == paused


async def test_a_paused_pool_yields_nothing(
    driver: LedgerDriver, db: Database, clock: ManualClock
) -> None:
    ids = [await _insert(driver, db, clock), await _insert(driver, db, clock, type=OTHER)]
    await in_tx(db, lambda c: pause_scope(c, "pool", LEDGER, by="ops", reason="r", now=clock.now()))
    assert await _claim(driver, db, clock, "priority") == []
    assert await _claim(driver, db, clock, "due") == []
    assert [(await job(db, i))["status"] for i in ids] == ["pending", "pending"]
    await in_tx(db, lambda c: resume_scope(c, "pool", LEDGER))
    assert await _claim(driver, db, clock, "due") == ids
