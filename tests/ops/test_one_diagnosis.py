"""One diagnosis (issue 31 item 1, SPEC O-12, O-16): every problem the
health inspection reports for an instance, at any threshold it accepts,
is a conclusion of that instance's drawer with the same rule
(``healthRule``), level, task, job and repair, the drawer reports nothing
under a health rule that the inspection does not, and the verdict never
says "nothing is wrong" while a rule fires.

Run on both backends over

- the fixture of every health rule: the demo's health cases
  (:mod:`flowledger.demo.health_cases`, one instance per rule, loaded with
  the rest of the demo), which must show every rule of :data:`EVERY_RULE`
  (written out here, not read from the registry, so a rule dropped from
  the inspection fails too);
- 40 faulty instance states drawn by hypothesis: instances of six small
  flows (approval with a timeout, delay, a gateway that matches nothing,
  subprocess, external approval, trigger) whose tokens, tasks and jobs are
  removed, consumed, failed or dead-lettered, whose events fail or stay
  pending, whose webhook deliveries die, and which age.

The inspection is run engine-wide (not filtered by the instance) and its
items taken with the repair the API shows (``problem_fields``), so the two
sides meet only in the rows they read."""

from __future__ import annotations

import json
from collections import defaultdict
from datetime import timedelta
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import delete, select, update

from flowledger.clock import ManualClock
from flowledger.db.database import Database
from flowledger.db.engine_schema import (
    workflow_definitions,
    workflow_event_outbox,
    workflow_instances,
    workflow_tasks,
    workflow_tokens,
)
from flowledger.db.schema import metadata, workflow_jobs
from flowledger.demo import load_demo
from flowledger.engine import Engine
from flowledger.events.webhooks import WEBHOOK_DELIVERY_TYPE
from flowledger.ledger.models import JobSpec
from flowledger.ops.diagnostics.consistency import Conclusion, InstanceFindings, instance_findings
from flowledger.ops.diagnostics.consistency_messages import HEALTHY_CODES
from flowledger.ops.health.inspection import Problem, inspect
from flowledger.ops.health.messages import problem_fields
from flowledger.states import EXTERNAL_OUTCOME_UNCONFIRMED
from tests.integration.engine_helpers import new_engine
from tests.ledger_access import ledger_of
from tests.ops.health_support import (
    approval_flow,
    dead_end_flow,
    delay_flow,
    external_flow,
    subprocess_flow,
    trigger_flow,
)

#: thresholds the inspection accepts (10 to 1440 minutes)
THRESHOLDS = (10, 30, 60, 1440)
EVERY_RULE = {
    "token_task_mismatch",
    "external_dispatch_failed",
    "external_dispatch_pending",
    "trigger_execution_failed",
    "trigger_waiting_no_execution",
    "subprocess_waiting",
    "delay_missing_wake_job",
    "delay_overdue",
    "task_timeout_overdue",
    "waiting_task_stuck",
    "workflow_event_outbox_failed",
    "workflow_event_outbox_pending",
    "instance_stalled",
    "webhook_delivery_failed",
}
# an address that is never called: no job runs in these tests
NOWHERE = "https://192.0.2.10"


def _item(p: Problem, now: Any) -> tuple[Any, ...]:
    """A problem as the inspection's item shows it, with its repair."""
    fields = problem_fields(p, now)
    return (
        fields["rule"],
        fields["level"],
        fields["task_id"],
        fields["job_id"],
        json.dumps(fields["repair"], sort_keys=True),
    )


def _conclusion(c: Conclusion) -> tuple[Any, ...]:
    task_ids, job_ids = c.evidence.task_ids, c.evidence.job_ids
    return (
        c.health_rule,
        c.level,
        task_ids[0] if task_ids else None,
        job_ids[0] if job_ids else None,
        json.dumps(c.repair, sort_keys=True),
    )


async def _drawer(db: Database, now: Any, instance_id: int, minutes: int) -> InstanceFindings:
    async with db.read() as conn:
        return await instance_findings(
            conn, instance_id, now=now, threshold=timedelta(minutes=minutes)
        )


async def assert_agreement(
    db: Database, clock: ManualClock, instance_ids: list[int]
) -> dict[int, set[str]]:
    """The inspection and the drawers of ``instance_ids`` agree at every
    threshold of :data:`THRESHOLDS`; returns the rules seen at 30 minutes
    by instance."""
    now = clock.now()
    seen: dict[int, set[str]] = {}
    for minutes in THRESHOLDS:
        async with db.read() as conn:
            problems = await inspect(conn, now=now, threshold=timedelta(minutes=minutes))
        reported: dict[int | None, list[tuple[Any, ...]]] = defaultdict(list)
        for p in problems:
            reported[p.instance_id].append(_item(p, now))
        for iid in instance_ids:
            found = await _drawer(db, now, iid, minutes)
            expected = sorted(reported[iid], key=repr)
            shown = sorted(
                (_conclusion(c) for c in found.conclusions if c.health_rule is not None),
                key=repr,
            )
            assert shown == expected, (iid, minutes, found.to_public())
            if found.conclusions:
                # a rule fires: the verdict names a conclusion, never "nothing is wrong"
                assert found.verdict.code not in HEALTHY_CODES, (iid, found.to_public())
                assert not found.verdict.message.lower().startswith("nothing is")
            if minutes == 30:
                seen[iid] = {row[0] for row in expected}
    return seen


async def test_every_health_rule_fixture_agrees_with_the_drawer_O12_O16(
    db: Database, clock: ManualClock
) -> None:
    report = await load_demo(new_engine(db, clock))
    seen = await assert_agreement(db, clock, report.instances)
    # every rule's fixture fires (so agreement is never vacuous)
    assert set().union(*seen.values()) == EVERY_RULE, set().union(*seen.values())
    hooked = [iid for iid, rules in seen.items() if "webhook_delivery_failed" in rules]
    assert hooked
    found = await _drawer(db, clock.now(), hooked[0], 10)
    (failed,) = [c for c in found.conclusions if c.rule == "webhook_delivery_failed"]
    assert (failed.level, failed.health_rule) == ("critical", "webhook_delivery_failed")
    assert failed.repair == {
        "action": "replay",
        "params": {
            "types": ["webhook_delivery"],
            "instanceId": hooked[0],
            "statuses": ["dead", "failed"],
        },
    }
    assert failed.message_params["count"] == 1


# ------------------------------------------------------------ faulty states

FLOWS = {
    "leave": (approval_flow(timeout={"after": "PT15M", "action": "notify"}), {}),
    "wait": (delay_flow(duration="PT20M"), {}),
    "dead": (dead_end_flow(), {"amount": 1}),
    "parent": (subprocess_flow()[0], {}),
    "ext": (external_flow(NOWHERE), {}),
    "erp": (trigger_flow(NOWHERE), {}),
}
_which = st.integers(min_value=0, max_value=2)
OPERATIONS = st.lists(
    st.one_of(
        st.tuples(st.sampled_from(["consume_tokens", "delete_tokens", "delete_tasks"]), _which),
        st.tuples(st.just("delete_jobs"), _which),
        st.tuples(
            st.just("fail_jobs"),
            _which,
            st.sampled_from(["failed", "dead"]),
            st.booleans(),
        ),
        st.tuples(st.just("fail_events"), _which),
        st.tuples(st.just("dead_webhook"), _which, st.booleans()),
        st.tuples(st.just("flush_events")),
        st.tuples(st.just("age"), st.sampled_from([5, 12, 25, 45, 90, 1500])),
    ),
    min_size=1,
    max_size=6,
)
STARTS = st.lists(st.sampled_from(sorted(FLOWS)), min_size=1, max_size=3)
#: what one example leaves behind, wiped before the next (definitions stay):
#: on SQLite a deleted row's id is given out again, and a dangling row of an
#: earlier example (a job whose task was deleted) would name a task of this one
_RUN_TABLES = [
    t
    for t in reversed(metadata.sorted_tables)
    if t.name.startswith(("workflow_", "connector_calls"))
    and t.name
    not in ("workflow_definitions", "workflow_alert_rules", "workflow_retention_policies")
]


async def _wipe(db: Database) -> None:
    async with db.begin() as conn:
        for table in _RUN_TABLES:
            await conn.execute(delete(table))


async def _deploy(engine: Engine, db: Database) -> None:
    """The flows, once per database (hypothesis's examples share it)."""
    async with db.read() as conn:
        found = await conn.execute(
            select(workflow_definitions.c.id).where(workflow_definitions.c.key == "kid")
        )
        if found.first() is not None:
            return
    await engine.deploy(subprocess_flow()[1], actor="a")  # the child first
    for source, _form in FLOWS.values():
        await engine.deploy(source, actor="a")


async def _dead_webhook(db: Database, clock: ManualClock, iid: int, unconfirmed: bool) -> None:
    """A webhook delivery of one of the instance's events, dead-lettered:
    dead, or failed with the L-17 code (a failed one without it is not a
    dead letter, and must not be reported)."""
    async with db.begin() as conn:
        tenant = (
            await conn.execute(
                select(workflow_instances.c.tenant_id).where(workflow_instances.c.id == iid)
            )
        ).scalar_one()
        job = await ledger_of(conn).job_insert(
            conn,
            JobSpec(type=WEBHOOK_DELIVERY_TYPE, payload={}, tenant_id=tenant, instance_id=iid),
            now=clock.now(),
        )
        await conn.execute(
            update(workflow_jobs)
            .where(workflow_jobs.c.id == job.job_id)
            .values(
                status="failed" if unconfirmed else "dead",
                last_error_code=EXTERNAL_OUTCOME_UNCONFIRMED if unconfirmed else "permanent",
                updated_at=clock.now(),
            )
        )


async def _apply(db: Database, clock: ManualClock, ids: list[int], op: tuple[Any, ...]) -> None:
    name = op[0]
    if name == "age":
        clock.advance(seconds=op[1] * 60)
        return
    if name == "flush_events":
        async with db.begin() as conn:
            await conn.execute(
                update(workflow_event_outbox)
                .where(workflow_event_outbox.c.status == "pending")
                .values(status="dispatched", dispatched_at=clock.now())
            )
        return
    iid = ids[op[1] % len(ids)]
    if name == "dead_webhook":
        await _dead_webhook(db, clock, iid, op[2])
        return
    async with db.begin() as conn:
        if name == "consume_tokens":
            await conn.execute(
                update(workflow_tokens)
                .where(workflow_tokens.c.instance_id == iid)
                .values(state="consumed", consumed_at=clock.now())
            )
        elif name == "delete_tokens":
            await conn.execute(delete(workflow_tokens).where(workflow_tokens.c.instance_id == iid))
        elif name == "delete_tasks":
            await conn.execute(delete(workflow_tasks).where(workflow_tasks.c.instance_id == iid))
        elif name == "delete_jobs":
            await conn.execute(delete(workflow_jobs).where(workflow_jobs.c.instance_id == iid))
        elif name == "fail_jobs":
            code = EXTERNAL_OUTCOME_UNCONFIRMED if op[3] else "retryable"
            await conn.execute(
                update(workflow_jobs)
                .where(workflow_jobs.c.instance_id == iid)
                .values(status=op[2], last_error_code=code, updated_at=clock.now())
            )
        elif name == "fail_events":
            await conn.execute(
                update(workflow_event_outbox)
                .where(workflow_event_outbox.c.instance_id == iid)
                .values(status="failed", dispatched_at=clock.now())
            )


@settings(
    max_examples=40,
    deadline=None,
    derandomize=True,  # the same states on every run and machine
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(starts=STARTS, operations=OPERATIONS)
async def test_faulty_instance_states_agree_with_the_drawer_O12_O16(
    db: Database, clock: ManualClock, starts: list[str], operations: list[tuple[Any, ...]]
) -> None:
    engine = new_engine(db, clock)
    await _deploy(engine, db)
    await _wipe(db)
    ids = []
    for key in starts:
        _source, form = FLOWS[key]
        ids.append(await engine.start(key, form=dict(form), initiator="u"))
    for op in operations:
        await _apply(db, clock, ids, op)
    await assert_agreement(db, clock, ids)
