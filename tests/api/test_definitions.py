"""Definitions through the API (SPEC E-1, A-4): deploy from YAML text, JSON
text or a parsed document; each deploy is a new immutable version; the list
shows the latest version per key (keyset paged); one version is readable
with its source. A definition with problems is 422 ``definition_invalid``
listing every problem (code, message, node, edge, field) and writes no
definition row; a malformed body is 422 ``validation_error`` naming the
field."""

from __future__ import annotations

import json

import pytest

from flowledger.db.engine_schema import workflow_definitions
from tests.api.conftest import Api, People, approval

YAML = """
key: trip
name: Business trip
form:
  fields:
    - {key: city, type: string, required: true}
nodes:
  - {key: start, type: start}
  - key: boss
    type: approval
    assignees: {users: [mia]}
  - {key: end, type: end}
edges:
  - {from: start, to: boss}
  - {from: boss, to: end}
"""


async def test_deploy_yaml_then_new_version(api: Api, people: People) -> None:
    first = await api.post("/definitions", people.dev, {"source": YAML})
    assert first.status_code == 201, first.text
    body = first.json()
    assert body["key"] == "trip" and body["version"] == 1 and body["name"] == "Business trip"
    assert body["tenant"] == "default" and body["deployedBy"] == "dev"
    assert {"id", "deployedAt"} <= set(body)
    second = await api.post("/definitions", people.dev, {"source": YAML})
    assert second.json()["version"] == 2
    assert second.json()["id"] != body["id"]


async def test_deploy_json_text_and_document(api: Api, people: People) -> None:
    text = await api.post("/definitions", people.dev, {"source": json.dumps(approval("a"))})
    assert text.status_code == 201, text.text
    doc = await api.deploy(people.dev, approval("b"))
    assert (text.json()["key"], doc["key"]) == ("a", "b")


async def test_list_latest_versions_paged(api: Api, people: People) -> None:
    for key in ("alpha", "beta", "gamma"):
        await api.deploy(people.dev, approval(key))
    await api.deploy(people.dev, approval("beta"))
    page = (await api.get("/definitions", people.mon, limit=2)).json()
    assert [(d["key"], d["version"]) for d in page["items"]] == [("alpha", 1), ("beta", 2)]
    assert page["next"]
    rest = (await api.get("/definitions", people.mon, limit=2, cursor=page["next"])).json()
    assert [(d["key"], d["version"]) for d in rest["items"]] == [("gamma", 1)]
    assert rest["next"] is None


async def test_versions_and_source(api: Api, people: People) -> None:
    await api.deploy(people.dev, approval())
    await api.deploy(people.dev, approval(assignees=["max"]))
    versions = (await api.get("/definitions/leave/versions", people.mon)).json()
    assert [v["version"] for v in versions["items"]] == [2, 1]
    one = await api.get("/definitions/leave/versions/1", people.mon)
    assert one.status_code == 200
    source = one.json()["source"]
    assert source["key"] == "leave"
    manager = next(n for n in source["nodes"] if n["key"] == "manager")
    assert manager["assignees"]["users"] == ["mia"]
    missing = await api.get("/definitions/leave/versions/9", people.mon)
    assert missing.status_code == 404
    assert missing.json()["code"] == "definition_not_found"
    nokey = await api.get("/definitions/nope/versions", people.mon)
    assert nokey.status_code == 404


async def test_definition_with_problems_is_422_with_every_problem(api: Api, people: People) -> None:
    bad = approval()
    bad["nodes"].append({"key": "island", "type": "handle", "assignees": {"users": ["x"]}})
    bad["edges"].append({"from": "manager", "to": "nowhere"})
    response = await api.post("/definitions", people.dev, {"definition": bad})
    assert response.status_code == 422, response.text
    body = response.json()
    assert body["code"] == "definition_invalid"
    problems = body["problems"]
    assert all(set(p) == {"code", "message", "node", "edge", "field"} for p in problems)
    codes = {p["code"] for p in problems}
    assert "dangling_edge" in codes and "unreachable_node" in codes
    assert any(p["edge"] == "manager->nowhere" for p in problems)
    assert any(p["node"] == "island" for p in problems)
    assert await api.count(workflow_definitions) == 0


async def test_unknown_node_type_names_the_node(api: Api, people: People) -> None:
    bad = approval()
    bad["nodes"][1]["type"] = "aproval"
    response = await api.post("/definitions", people.dev, {"definition": bad})
    assert response.status_code == 422
    [problem] = [p for p in response.json()["problems"] if p["code"] == "unknown_node_type"]
    assert problem["node"] == "manager"


async def test_yaml_syntax_error(api: Api, people: People) -> None:
    response = await api.post("/definitions", people.dev, {"source": "key: [unclosed"})
    assert response.status_code == 422
    assert response.json()["code"] == "definition_invalid"
    assert response.json()["problems"][0]["code"] == "syntax_error"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "body"),
        ({"source": YAML, "definition": approval()}, "body"),
        ({"source": 12}, "body.source"),
        ({"definition": "not an object"}, "body.definition"),
        ({"definition": approval(), "defn": {}}, "body.defn"),
        ({"definition": approval(), "tenant": "no spaces allowed"}, "body.tenant"),
        ({"definition": {**approval(), "name": "a\u0000b"}}, "body.definition"),
        ({"source": "key: a\u0000b"}, "body.source"),
    ],
    ids=[
        "empty",
        "both",
        "source-type",
        "definition-type",
        "unknown-field",
        "bad-tenant",
        "nul-in-document",
        "nul-in-source",
    ],
)
async def test_bad_body_is_422_naming_the_field(
    api: Api, people: People, body: dict, field: str
) -> None:
    response = await api.post("/definitions", people.dev, body)
    assert response.status_code == 422, response.text
    assert response.json()["code"] == "validation_error"
    assert response.json()["field"] == field
    assert await api.count(workflow_definitions) == 0


async def test_bad_cursor_is_422(api: Api, people: People) -> None:
    response = await api.get("/definitions", people.mon, cursor="!!not-a-cursor")
    assert response.status_code == 422
    assert response.json()["code"] == "cursor_invalid"
    assert response.json()["field"] == "cursor"


async def test_overlong_name_is_422_not_a_database_error(api: Api, people: People) -> None:
    """workflow_definitions.name is VARCHAR(255): a longer name must be refused
    by validation, not by PostgreSQL."""
    long = approval()
    long["name"] = "n" * 300
    response = await api.post("/definitions", people.dev, {"definition": long})
    assert response.status_code == 422, response.text
    assert await api.count(workflow_definitions) == 0


async def test_overlong_node_key_is_refused_at_deploy(api: Api, people: People) -> None:
    long = approval()
    key = "k" * 200
    long["nodes"][1]["key"] = key
    long["edges"] = [{"from": "start", "to": key}, {"from": key, "to": "end"}]
    response = await api.post("/definitions", people.dev, {"definition": long})
    assert response.status_code == 422, response.text
