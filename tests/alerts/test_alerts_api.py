"""The alerting API (SPEC O-22, A-2, A-3, A-4): rule CRUD with the issue's
field names, silences, events; permissions (mutations need
``workflow:engine:operate``, reads ``workflow:instance:monitor``), tenant
scope (another tenant's objects are 404), audit rows for every mutation,
and validation errors with their ``code`` and ``field``."""

from __future__ import annotations

from typing import Any

from flowledger.api.permissions import ENGINE_OPERATE, INSTANCE_MONITOR, TASK_ACT
from flowledger.clock import ManualClock
from flowledger.db.engine_schema import operation_audit
from flowledger.ops.alerts.evaluator import evaluate_once
from tests.alerts.support import dead_job
from tests.api.conftest import Api, Headers
from tests.ledger_access import ledger_of

RULES = "/engine/alerts/rules"
SILENCES = "/engine/alerts/silences"


def rule_body(**extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "name": "dead letters",
        "metric": "dead_letters",
        "comparison": "gt",
        "threshold": 0,
        "for": "5m",
        "severity": "critical",
        "channels": {
            "email": ["ops@example.com"],
            "webhook": {"url": "https://hooks.example.com/alerts"},
            "inApp": ["mia"],
        },
    }
    body.update(extra)
    return body


async def operator(api: Api, tenants: tuple[str, ...] = ("acme",)) -> Headers:
    user = f"op-{'-'.join(tenants)}"
    return await api.token(user, ENGINE_OPERATE, INSTANCE_MONITOR, tenants=tenants)


async def audits(api: Api) -> list[tuple[str, str, str | None]]:
    rows = await api.rows(operation_audit)
    return [(r["action"], r["result"], r["tenant_id"]) for r in rows]


async def test_rule_crud_with_the_issue_fields_and_audit_O22_A2(api: Api) -> None:
    ops = await operator(api)
    created = await api.client.post(f"/api/workflows{RULES}", json=rule_body(), headers=ops)
    assert created.status_code == 201, created.text
    rule = created.json()
    assert rule["tenant"] == "acme"
    assert (rule["metric"], rule["comparison"], rule["threshold"]) == ("dead_letters", "gt", 0.0)
    assert (rule["for"], rule["forSeconds"], rule["severity"]) == ("5m", 300, "critical")
    assert rule["channels"] == {
        "email": ["ops@example.com"],
        "webhook": {"url": "https://hooks.example.com/alerts", "hasSecret": True},
        "inApp": ["mia"],
    }
    assert rule["enabled"] is True and rule["state"] == "ok"
    assert len(rule["webhookSecret"]) >= 32  # generated, shown once

    got = (await api.get(f"{RULES}/{rule['id']}", ops)).json()
    assert "webhookSecret" not in got and got["for"] == "5m"

    patched = await api.client.patch(
        f"/api/workflows{RULES}/{rule['id']}",
        json={"threshold": 10, "for": "PT90S", "channels": {"webhook": None}},
        headers=ops,
    )
    assert patched.status_code == 200, patched.text
    assert (patched.json()["threshold"], patched.json()["for"]) == (10.0, "1m30s")
    assert patched.json()["channels"]["webhook"] is None
    assert patched.json()["channels"]["email"] == ["ops@example.com"]

    listed = (await api.get(RULES, ops)).json()
    assert [r["id"] for r in listed["items"]] == [rule["id"]] and listed["next"] is None

    deleted = await api.client.delete(f"/api/workflows{RULES}/{rule['id']}", headers=ops)
    assert deleted.status_code == 204
    assert (await api.get(f"{RULES}/{rule['id']}", ops)).status_code == 404
    assert await audits(api) == [
        ("alert_rule.create", "ok", "acme"),
        ("alert_rule.update", "ok", "acme"),
        ("alert_rule.delete", "ok", "acme"),
    ]
    detail = (await api.rows(operation_audit))[0]["detail"]
    assert "secret" not in str(detail).lower().replace("secretchanged", "")


async def test_for_accepts_seconds_and_durations_and_refuses_nonsense_O22(api: Api) -> None:
    ops = await operator(api)
    for given, seconds in ((300, 300), ("300", 300), ("1h30m", 5400), ("PT5M", 300), ("0s", 0)):
        response = await api.post(RULES, ops, rule_body(**{"for": given}))
        assert response.status_code == 201, response.text
        assert response.json()["forSeconds"] == seconds
    for bad in ("5 minutes", "-5m", "8d", "P1Y", 1.5):
        response = await api.post(RULES, ops, rule_body(**{"for": bad}))
        assert response.status_code == 422, (bad, response.text)
        assert (response.json()["code"], response.json()["field"]) in (
            ("alert_rule_invalid", "for"),
            ("validation_error", "body.for.int"),
        )


async def test_validation_errors_name_code_and_field_A4(api: Api) -> None:
    ops = await operator(api)
    cases = [
        (rule_body(metric="cpu"), "alert_metric_unknown", "metric"),
        (rule_body(channels={"email": ["not-an-address"]}), "alert_rule_invalid", "channels.email"),
        (
            rule_body(channels={"webhook": {"url": "ftp://x.example.com"}}),
            "alert_rule_invalid",
            "channels.webhook.url",
        ),
        (rule_body(comparison="eq"), "validation_error", "body.comparison"),
        (rule_body(severity="page"), "validation_error", "body.severity"),
    ]
    for body, code, field in cases:
        response = await api.post(RULES, ops, body)
        assert response.status_code == 422, response.text
        assert (response.json()["code"], response.json()["field"]) == (code, field)
    assert await api.count(operation_audit) == 3  # the three refused by the rules module
    assert (await api.get(RULES, ops)).json()["items"] == []


async def test_permissions_403_and_reads_need_monitor_A2(api: Api) -> None:
    monitor = await api.token("watcher", INSTANCE_MONITOR, tenants=("acme",))
    worker = await api.token("clerk", TASK_ACT, tenants=("acme",))
    refused = await api.post(RULES, monitor, rule_body())
    assert refused.status_code == 403 and refused.json()["permission"] == ENGINE_OPERATE
    assert await audits(api) == [("alert_rule.create", "failed", None)]
    assert (await api.get(RULES, monitor)).status_code == 200
    assert (await api.get(RULES, worker)).status_code == 403
    assert (await api.get("/engine/alerts/events", worker)).status_code == 403
    assert (await api.get(SILENCES, worker)).status_code == 403
    response = await api.post(SILENCES, monitor, {"duration": "1h", "comment": "x"})
    assert response.status_code == 403


async def test_other_tenants_rules_are_404_and_overall_needs_every_tenant_A3(api: Api) -> None:
    acme, globex = await operator(api, ("acme",)), await operator(api, ("globex",))
    root = await api.admin()
    rule = (await api.post(RULES, acme, rule_body())).json()
    overall = await api.post(RULES, root, rule_body(tenant="*"))
    assert overall.status_code == 201 and overall.json()["tenant"] is None
    for method in ("GET", "PATCH", "DELETE"):
        response = await api.client.request(
            method,
            f"/api/workflows{RULES}/{rule['id']}",
            headers=globex,
            json={"threshold": 1} if method == "PATCH" else None,
        )
        assert response.status_code == 404, (method, response.text)
        assert (response.json()["code"], response.json()["field"]) == (
            "alert_rule_not_found",
            "ruleId",
        )
    assert (await api.get(f"{RULES}/{overall.json()['id']}", acme)).status_code == 404
    assert [r["id"] for r in (await api.get(RULES, acme)).json()["items"]] == [rule["id"]]
    assert len((await api.get(RULES, root)).json()["items"]) == 2
    # naming a tenant one cannot see, or every tenant, is refused
    assert (await api.post(RULES, acme, rule_body(tenant="globex"))).status_code == 403
    response = await api.post(RULES, acme, rule_body(tenant="*"))
    assert (response.status_code, response.json()["field"]) == (403, "tenant")


async def test_silences_create_list_expire_delete_with_audit_O22(
    api: Api, clock: ManualClock
) -> None:
    ops = await operator(api)
    rule = (await api.post(RULES, ops, rule_body())).json()
    created = await api.post(
        SILENCES,
        ops,
        {"matcher": {"ruleId": rule["id"]}, "duration": "2h", "comment": "deploying"},
    )
    assert created.status_code == 201, created.text
    silence = created.json()
    assert silence["matcher"] == {"ruleId": rule["id"], "metric": None, "tenant": "acme"}
    assert silence["state"] == "active" and silence["createdBy"] == "op-acme"
    assert silence["comment"] == "deploying"
    listed = (await api.get(SILENCES, ops, state="active")).json()["items"]
    assert [s["id"] for s in listed] == [silence["id"]]

    expired = await api.post(f"{SILENCES}/{silence['id']}/expire", ops)
    assert expired.status_code == 200 and expired.json()["state"] == "expired"
    again = await api.post(f"{SILENCES}/{silence['id']}/expire", ops)
    assert (again.status_code, again.json()["code"]) == (409, "alert_silence_expired")
    assert (await api.get(SILENCES, ops, state="active")).json()["items"] == []

    other = await operator(api, ("globex",))
    hidden = await api.post(f"{SILENCES}/{silence['id']}/expire", other)
    assert (hidden.status_code, hidden.json()["field"]) == (404, "silenceId")
    gone = await api.client.delete(f"/api/workflows{SILENCES}/{silence['id']}", headers=ops)
    assert gone.status_code == 204
    # a matcher on another tenant's rule is 404; no window is 422
    assert (
        await api.post(
            SILENCES, other, {"matcher": {"ruleId": rule["id"]}, "duration": "1h", "comment": "x"}
        )
    ).status_code == 404
    bad = await api.post(SILENCES, ops, {"comment": "x"})
    assert (bad.status_code, bad.json()["field"]) == (422, "endsAt")
    assert [a for a in await audits(api) if a[0].startswith("alert_silence")] == [
        ("alert_silence.create", "ok", "acme"),
        ("alert_silence.expire", "ok", "acme"),
        ("alert_silence.expire", "failed", None),  # 409
        ("alert_silence.expire", "failed", None),  # 404
        ("alert_silence.delete", "ok", "acme"),
        ("alert_silence.create", "failed", None),
        ("alert_silence.create", "failed", None),
    ]


async def test_a_silence_past_the_year_9999_is_a_422_on_its_duration_O22(api: Api) -> None:
    ops = await operator(api)
    rule = (await api.post(RULES, ops, rule_body())).json()
    body = {"ruleId": rule["id"], "startsAt": "9999-12-31T23:00:00Z", "duration": "2h"}
    bad = await api.post(SILENCES, ops, {**body, "comment": "x"})
    assert (bad.status_code, bad.json()["code"], bad.json()["field"]) == (
        422,
        "alert_silence_invalid",
        "duration",
    ), bad.text
    assert (await api.get(SILENCES, ops)).json()["items"] == []


async def test_events_list_shows_the_triggering_value_and_is_tenant_scoped_O22(
    api: Api, clock: ManualClock
) -> None:
    ops = await operator(api)
    body = rule_body(**{"for": 0, "channels": {}})
    rule = (await api.post(RULES, ops, body)).json()
    await dead_job(api.db, clock)
    await dead_job(api.db, clock)
    await evaluate_once(api.db, clock, ledger=ledger_of(api.db))
    events = (await api.get("/engine/alerts/events", ops)).json()
    (event,) = events["items"]
    assert (event["ruleId"], event["kind"], event["value"], event["tenant"]) == (
        rule["id"],
        "firing",
        2.0,
        "acme",
    )
    assert event["notificationJobIds"] == [] and event["silenced"] is False
    assert (await api.get(f"{RULES}/{rule['id']}", ops)).json()["state"] == "firing"
    other = await operator(api, ("globex",))
    assert (await api.get("/engine/alerts/events", other)).json()["items"] == []
    values = (await api.get("/engine/alerts/metrics", ops)).json()["items"]
    assert {v["metric"]: v["value"] for v in values}["dead_letters"] == 2.0


async def test_short_forms_webhook_url_string_for_seconds_flat_matcher_O22(api: Api) -> None:
    ops = await operator(api)
    body = rule_body(channels={"webhook": "https://hooks.example.com/a"}, forSeconds=120)
    del body["for"]
    created = await api.post(RULES, ops, body)
    assert created.status_code == 201, created.text
    rule = created.json()
    assert (rule["for"], rule["forSeconds"]) == ("2m", 120)
    assert rule["channels"]["webhook"] == {"url": "https://hooks.example.com/a", "hasSecret": True}
    both = await api.post(RULES, ops, rule_body(forSeconds=60))
    assert (both.status_code, both.json()["field"]) == (422, "for")
    patched = await api.client.patch(
        f"/api/workflows{RULES}/{rule['id']}", json={"forSeconds": 600}, headers=ops
    )
    assert patched.json()["for"] == "10m"
    flat = await api.post(
        SILENCES,
        ops,
        {"ruleId": rule["id"], "metric": "dead_letters", "duration": 600, "comment": "short"},
    )
    assert flat.status_code == 201, flat.text
    assert flat.json()["matcher"] == {
        "ruleId": rule["id"],
        "metric": "dead_letters",
        "tenant": "acme",
    }


async def test_a_rule_without_tenant_covers_what_the_caller_sees_O22(api: Api) -> None:
    """No ``tenant``: the whole engine for a caller who sees every tenant
    (the runtime status panel's scope), the caller's own tenant otherwise;
    the comparison may be written as a symbol."""
    everything = await api.token("root-ops", ENGINE_OPERATE, INSTANCE_MONITOR, tenants=("*",))
    overall = await api.post(RULES, everything, rule_body(comparison=">="))
    assert overall.status_code == 201, overall.text
    assert (overall.json()["tenant"], overall.json()["comparison"]) == (None, "gte")
    one = await api.post(RULES, await operator(api), rule_body(comparison="<"))
    assert (one.json()["tenant"], one.json()["comparison"]) == ("acme", "lt")
