"""Consistency conclusions and the verdict of one instance (SPEC O-12), on
both backends: each rule's broken state made by the engine where it can
happen (a gateway that matches nothing, a failing trigger or external
dispatch receiver, events no relay dispatches) and by a direct write where
only a crash could cause it (a consumed token, a lost wake job, a failed
outbox row); each checks rule, level, evidence, repair and the verdict.
The healthy suite is tests/ops/test_health_no_false_positives.py."""

from __future__ import annotations

from sqlalchemy import delete, update

from flowledger.clock import ManualClock
from flowledger.db.database import Database
from flowledger.db.engine_schema import workflow_event_outbox
from flowledger.db.schema import workflow_jobs
from flowledger.ops.diagnostics.consistency import Conclusion, Evidence
from flowledger.settings import Settings
from tests.integration.engine_helpers import jobs, new_engine, tasks, tokens
from tests.ops.health_support import (
    approval_flow,
    consume_tokens,
    dead_end_flow,
    delay_flow,
    external_flow,
    findings,
    flush_events,
    run_and_flush,
    trigger_flow,
)
from tests.outbound import conftest as outbound_fixtures
from tests.outbound.receivers import Receiver

receiver = outbound_fixtures.receiver
other_receiver = outbound_fixtures.other_receiver
outbound_env = outbound_fixtures.outbound_env


def rules(conclusions: list[Conclusion]) -> list[tuple[str, str]]:
    return [(c.rule, c.level) for c in conclusions]


async def test_task_without_token_and_running_without_active_token_O12(
    db: Database, clock: ManualClock
) -> None:
    engine = new_engine(db, clock)
    await engine.deploy(approval_flow(), actor="a")
    iid = await engine.start("leave", form={}, initiator="u")
    await flush_events(db, clock)
    (task,) = await tasks(db, iid, node_key="manager")
    (token,) = await tokens(db, iid)
    await consume_tokens(db, iid)
    found = await findings(db, clock, iid)
    assert rules(found.conclusions) == [
        ("task_without_token", "critical"),
        ("running_without_active_token", "critical"),
    ]
    no_task, no_token = found.conclusions[0], found.conclusions[1]
    assert no_token.evidence == Evidence(task_ids=[], token_ids=[], job_ids=[])
    assert no_token.repair == {"action": "force_jump", "params": {"target": "manager"}}
    assert no_task.evidence == Evidence(task_ids=[task["id"]], token_ids=[], job_ids=[])
    assert no_task.repair == {"action": "force_jump", "params": {"target": "manager"}}
    assert found.verdict.action == "force_jump"
    assert found.verdict.params == {"target": "manager"}
    assert found.verdict.message == (
        f"Task {task['id']} at «manager» holds no active token, so acting on it will fail; "
        "force jump to «manager»."
    )
    assert token["id"] > 0
    public = found.to_public()
    assert public["conclusions"][0]["evidence"] == {
        "taskIds": [task["id"]],
        "tokenIds": [],
        "jobIds": [],
    }
    assert set(public["verdict"]) == {"code", "message", "messageParams", "action", "params"}
    # the values the texts are made of (the console words them from these)
    assert no_task.message_params == {"taskId": task["id"], "nodeKey": "manager"}
    assert public["conclusions"][1]["messageParams"] == {}
    # younger than the drawer's threshold: O-12's check, not the inspection's
    assert public["conclusions"][0]["healthRule"] is None
    clock.advance(seconds=11 * 60)
    older = await findings(db, clock, iid)
    assert older.conclusions[0].health_rule == "token_task_mismatch"
    assert rules(older.conclusions) == rules(found.conclusions)
    assert (found.verdict.code, found.verdict.message_params) == (
        "task_without_token",
        no_task.message_params,
    )


async def test_running_without_active_task_and_token_without_task_O12(
    db: Database, clock: ManualClock
) -> None:
    engine = new_engine(db, clock)
    await engine.deploy(dead_end_flow(), actor="a")
    iid = await engine.start("dead", form={"amount": 1}, initiator="u")
    await flush_events(db, clock)
    (token,) = await tokens(db, iid, "active")
    found = await findings(db, clock, iid)
    assert rules(found.conclusions) == [
        ("running_without_active_task", "critical"),
        ("instance_stalled", "critical"),
        ("token_without_task", "warning"),
    ]
    # the inspection's rule, with its repair: the operator picks the node
    stalled = found.conclusions[1]
    assert stalled.health_rule == "instance_stalled"
    assert stalled.repair == {"action": "force_jump", "params": {"target": None}}
    assert found.conclusions[0].health_rule is None
    assert found.conclusions[0].evidence.token_ids == [token["id"]]
    assert found.conclusions[2].evidence == Evidence(token_ids=[token["id"]])
    # the token stands at a gateway that matched no branch: jumping back onto
    # it would stall again, so the operator picks one of its branches
    assert found.verdict.action == "force_jump"
    assert found.verdict.params == {"target": None, "candidates": ["big"]}
    assert "force jump to one of «big»" in found.verdict.message
    assert found.conclusions[2].message_params == {"tokenId": token["id"], "nodeKey": "route"}
    assert (found.verdict.code, found.verdict.message_params) == ("running_without_active_task", {})


async def test_waiting_task_unwakeable_when_the_wake_job_is_lost_O12(
    db: Database, clock: ManualClock
) -> None:
    engine = new_engine(db, clock)
    await engine.deploy(delay_flow(), actor="a")
    iid = await engine.start("wait", form={}, initiator="u")
    await flush_events(db, clock)
    (task,) = await tasks(db, iid, node_key="pause")
    assert (await findings(db, clock, iid)).conclusions == []
    async with db.begin() as conn:
        await conn.execute(delete(workflow_jobs).where(workflow_jobs.c.instance_id == iid))
    found = await findings(db, clock, iid)
    # the inspection's delay_missing_wake_job (any age), then O-12's deadlock
    assert rules(found.conclusions) == [
        ("delay_missing_wake_job", "critical"),
        ("waiting_task_unwakeable", "critical"),
    ]
    assert found.conclusions[0].health_rule == "delay_missing_wake_job"
    assert found.conclusions[1].evidence == Evidence(task_ids=[task["id"]])
    assert found.verdict.code == "delay_missing_wake_job"
    assert found.verdict.action == "recovery"
    assert found.verdict.params == {"action": "delay-wake", "jobId": None}


async def test_trigger_execution_failed_gives_a_job_retry_verdict_O12(
    db: Database, clock: ManualClock, receiver: Receiver, outbound_env: Settings
) -> None:
    receiver.reply = 500  # an unsafe POST: the L-17 dead letter, task still waiting
    engine = new_engine(db, clock)
    await engine.deploy(trigger_flow(receiver.url), actor="a")
    iid = await engine.start("erp", form={}, initiator="u")
    await run_and_flush(db, clock)
    (task,) = await tasks(db, iid, node_key="erp")
    (job,) = await jobs(db, iid, type="trigger_dispatch")
    found = await findings(db, clock, iid)
    assert rules(found.conclusions) == [
        ("trigger_execution_failed", "critical"),
        ("waiting_task_unwakeable", "critical"),
    ]
    failed = found.conclusions[0]
    assert failed.health_rule == "trigger_execution_failed"
    assert failed.evidence == Evidence(task_ids=[task["id"]], job_ids=[job["id"]])
    assert failed.repair == {"action": "job_retry", "params": {"jobId": job["id"]}}
    assert (found.verdict.action, found.verdict.params) == ("job_retry", {"jobId": job["id"]})
    assert "confirm it with the receiver before any retry" in found.verdict.message
    assert failed.message_params == {
        "nodeKey": "erp",
        "jobId": job["id"],
        "errorCode": "external_outcome_unconfirmed",
        "outcomeUnconfirmed": True,
    }
    assert found.conclusions[1].message_params == {"nodeKeys": ["erp"]}


async def test_external_dispatch_failed_O12(
    db: Database, clock: ManualClock, receiver: Receiver, outbound_env: Settings
) -> None:
    receiver.reply = 400
    engine = new_engine(db, clock)
    await engine.deploy(external_flow(receiver.url, maxRetries=0), actor="a")
    iid = await engine.start("ext", form={}, initiator="u")
    await run_and_flush(db, clock)
    (task,) = await tasks(db, iid, node_key="partner")
    (job,) = await jobs(db, iid, type="external_dispatch")
    found = await findings(db, clock, iid)
    assert ("external_dispatch_failed", "critical") in rules(found.conclusions)
    (failed,) = [c for c in found.conclusions if c.rule == "external_dispatch_failed"]
    assert failed.evidence == Evidence(task_ids=[task["id"]], job_ids=[job["id"]])
    assert (found.verdict.action, found.verdict.params) == ("job_retry", {"jobId": job["id"]})


async def test_event_dispatch_failed_and_pending_O12(db: Database, clock: ManualClock) -> None:
    engine = new_engine(db, clock)
    await engine.deploy(approval_flow(), actor="a")
    iid = await engine.start("leave", form={}, initiator="u")
    clock.advance(seconds=29 * 60)
    # a short backlog is normal: below the threshold (here the inspection's default)
    assert (await findings(db, clock, iid, threshold_min=30)).conclusions == []
    clock.advance(seconds=2 * 60)
    found = await findings(db, clock, iid, threshold_min=30)
    assert rules(found.conclusions) == [
        ("waiting_task_stuck", "warning"),
        ("event_dispatch_pending", "warning"),
    ]
    pending = found.conclusions[1]
    assert pending.health_rule == "workflow_event_outbox_pending"
    assert pending.repair == {
        "action": "recovery",
        "params": {"action": "event-dispatch", "jobId": None},
    }
    async with db.begin() as conn:
        await conn.execute(
            update(workflow_event_outbox)
            .where(workflow_event_outbox.c.instance_id == iid)
            .values(status="failed")
        )
    found = await findings(db, clock, iid, threshold_min=30)
    assert rules(found.conclusions) == [
        ("event_dispatch_failed", "critical"),
        ("waiting_task_stuck", "warning"),
    ]
    assert found.verdict.action == "recovery"
    assert found.verdict.params == {"action": "event-dispatch", "jobId": None}


async def test_the_verdict_of_a_healthy_instance_says_what_it_waits_for_O12(
    db: Database, clock: ManualClock
) -> None:
    engine = new_engine(db, clock)
    await engine.deploy(approval_flow(), actor="a")
    iid = await engine.start("leave", form={}, initiator="u")
    await flush_events(db, clock)
    (task,) = await tasks(db, iid, node_key="manager")
    clock.advance(seconds=3 * 3600 + 60)
    # at the drawer's default threshold the inspection reports the task
    found = await findings(db, clock, iid)
    assert rules(found.conclusions) == [("waiting_task_stuck", "warning")]
    assert found.verdict.code == "waiting_task_stuck"
    assert found.verdict.message == (
        f"Task {task['id']} at «manager» has waited 3 h for alice; remind alice."
    )
    # at a day's threshold nothing fires: the verdict says what it waits for
    found = await findings(db, clock, iid, threshold_min=1440)
    assert found.conclusions == []
    assert found.verdict.message == "nothing is wrong: waiting for alice since 3 h"
    assert (found.verdict.action, found.verdict.params) == (None, {})
    assert found.verdict.code == "waiting_for_people"
    assert found.verdict.message_params == {"assignees": ["alice"], "ageMinutes": 181}
    clock.advance(seconds=86400)
    found = await findings(db, clock, iid, threshold_min=1440)
    # past a day the inspection reports it even at its largest threshold
    assert rules(found.conclusions) == [("waiting_task_stuck", "warning")]
    assert found.verdict.action == "remind"
    assert found.verdict.params == {"taskId": task["id"], "assignee": "alice"}
    assert found.verdict.code == "waiting_task_stuck"
    assert found.verdict.message_params == {
        "taskId": task["id"],
        "nodeKey": "manager",
        "ageMinutes": 181 + 1440,
        "assignee": "alice",
    }
    assert found.verdict.message == (
        f"Task {task['id']} at «manager» has waited 1 d for alice; remind alice."
    )
