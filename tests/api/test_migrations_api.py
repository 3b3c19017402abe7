"""The instance migration API (issue 30), both backends: preview (counts by
verdict, per-instance documents, nothing written), run (201 with the saved
plan's id, progress and per-instance results equal to the preview's; audit
rows), read back, version drainage; permissions declared on the routes and
bad input refused with the field named."""

from __future__ import annotations

from typing import Any

from flowledger.db.engine_schema import operation_audit, workflow_instances
from tests.api.conftest import Api, People, approval

V2 = approval()
V2["nodes"][1] = {**V2["nodes"][1], "key": "boss"}
V2["edges"] = [{"from": "start", "to": "boss"}, {"from": "boss", "to": "end"}]


def _body(ids: list[int] | None, **extra: Any) -> dict[str, Any]:
    return {
        "definitionKey": "leave",
        "fromVersions": [1],
        "toVersion": 2,
        "instanceIds": ids,
        "mapping": {"manager": "boss"},
        "reason": "the manager step is now the boss step",
        **extra,
    }


async def test_preview_run_and_read_back(api: Api, people: People) -> None:
    await api.deploy(people.root, approval())
    first = (await api.start(people.ann))["id"]
    second = (await api.start(people.ann))["id"]
    await api.deploy(people.root, V2)
    before = await api.rows(workflow_instances)

    preview = await api.post("/migrations/preview", people.ops, _body([first, second]))
    assert preview.status_code == 200, preview.text
    found = preview.json()
    assert found["total"] == 2 and found["counts"] == {"ok": 0, "changed": 2, "blocked": 0}
    assert found["mapping"]["manager"] == "boss"
    assert [t["nodeKey"] for t in found["instances"][0]["tasks"]] == ["boss"]
    assert await api.rows(workflow_instances) == before  # the dry run wrote nothing

    drain = await api.get("/definitions/leave/versions/running", people.ops)
    assert [(v["version"], v["running"]) for v in drain.json()["versions"]] == [(1, 2)]

    run = await api.post("/migrations", people.ops, _body([first, second]))
    assert run.status_code == 201, run.text
    done = run.json()
    assert done["status"] == "done" and done["progress"]["byOutcome"] == {"migrated": 2}
    by_id = {r["instanceId"]: r for r in found["instances"]}
    for item in done["items"]:
        assert item["result"] == by_id[item["instanceId"]]
    again = await api.get(f"/migrations/{done['id']}", people.ops)
    assert again.status_code == 200 and again.json()["items"] == done["items"]

    drain = await api.get("/definitions/leave/versions/running", people.ops)
    assert [(v["version"], v["running"]) for v in drain.json()["versions"]] == [(2, 2)]
    audit = [r for r in await api.rows(operation_audit) if "migrat" in r["action"]]
    assert sorted(r["action"] for r in audit) == [
        "instance.migrate",
        "instance.migrate",
        "migration.run",
    ]
    run_row = next(r for r in audit if r["action"] == "migration.run")
    assert (run_row["target_id"], run_row["result"]) == (str(done["id"]), "ok")

    # the migrated instance is approved on the target's node
    task = (await api.my_tasks(people.mia))[0]
    assert task["nodeKey"] == "boss"


async def test_permissions_and_bad_input(api: Api, people: People) -> None:
    await api.deploy(people.root, approval())
    iid = (await api.start(people.ann))["id"]
    await api.deploy(people.root, V2)
    for path in ("/migrations/preview", "/migrations"):
        refused = await api.post(path, people.mon, _body([iid]))
        assert refused.status_code == 403
        assert refused.json()["permission"] == "workflow:engine:operate"
    cases = [
        (_body([iid], toVersion=7), "toVersion"),
        (_body([iid], mapping={"manager": "nowhere"}), "mapping.manager"),
        (_body([iid], fieldValues={"zzz": 1}), "fieldValues.zzz"),
        (_body([iid + 50]), "instanceIds"),
    ]
    for body, field in cases:
        bad = await api.post("/migrations/preview", people.ops, body)
        assert (bad.status_code, bad.json()["field"]) == (422, field), bad.text
    # a NUL anywhere is a 422 on its field, before anything is written (PostgreSQL
    # refuses it in text and jsonb; it was stored on SQLite and a 500 there)
    nul_cases = [
        (_body([iid], name="a\u0000b"), "body.name"),
        (_body([iid], fieldValues={"vendor": "a\u0000b"}), "body.fieldValues"),
        (_body(None, instanceIds=None, filter={"keyword": "a\u0000"}), "body.filter.keyword"),
        (_body([iid], mapping={"manager": "bo\u0000ss"}), "body.mapping.manager"),
    ]
    for body, field in nul_cases:
        for path in ("/migrations/preview", "/migrations"):
            bad = await api.post(path, people.ops, body)
            assert bad.status_code == 422, bad.text
            assert bad.json()["field"].startswith(field), bad.text
    blank = await api.post("/migrations", people.ops, _body([iid], reason=" "))
    assert (blank.status_code, blank.json()["code"]) == (422, "reason_required")
    assert (await api.get("/migrations/999", people.ops)).status_code == 404
    assert (await api.rows(workflow_instances))[0]["definition_version"] == 1
