"""The OpenAPI document (SPEC A-1, STYLE "operation ids `{tag}-{name}`"):
served at /api/openapi.json with docs at /api/docs, every route under
/api/workflows, every operation with a unique ``{tag}-{name}`` operationId,
bearer auth declared, and the common error body documented."""

from __future__ import annotations

from tests.api.conftest import Api

METHODS = {"get", "post", "put", "patch", "delete"}


async def _document(api: Api) -> dict:
    response = await api.client.get("/api/openapi.json")
    assert response.status_code == 200
    return dict(response.json())


async def test_document_served_with_operation_ids(api: Api) -> None:
    doc = await _document(api)
    operations = [
        (path, method, op)
        for path, item in doc["paths"].items()
        for method, op in item.items()
        if method in METHODS
    ]
    assert len(operations) >= 20
    ids = [op.get("operationId") for _, _, op in operations]
    assert all(ids), "every operation has an operationId"
    assert len(set(ids)) == len(ids)
    for path, _method, op in operations:
        assert path.startswith("/api/workflows/")
        tag = op["tags"][0]
        assert op["operationId"].startswith(f"{tag}-"), op["operationId"]


async def test_expected_operations_present(api: Api) -> None:
    ids = {
        op["operationId"]
        for item in (await _document(api))["paths"].values()
        for op in item.values()
        if isinstance(op, dict) and "operationId" in op
    }
    for expected in [
        "definitions-deploy_definition",
        "definitions-list_definitions",
        "definitions-read_definition_version",
        "instances-start_instance",
        "instances-list_instances",
        "instances-read_instance",
        "instances-suspend_instance",
        "instances-resume_instance",
        "instances-withdraw_instance",
        "instances-cancel_instance",
        "instances-return_instance",
        "instances-comment_instance",
        "tasks-list_tasks",
        "tasks-approve_task",
        "tasks-reject_task",
        "tasks-handle_task",
        "tasks-transfer_task",
        "tasks-comment_task",
        "tasks-reassign_task",
        "schedules-list_schedules",
        "schedules-create_schedule",
        "schedules-launch_schedule",
        "me-read_me",
    ]:
        assert expected in ids


async def test_camel_case_and_error_schema(api: Api) -> None:
    doc = await _document(api)
    schemas = doc["components"]["schemas"]
    assert "definitionKey" in schemas["InstanceCreate"]["properties"]
    assert "createdAt" in schemas["InstancePublic"]["properties"]
    assert {"code", "message", "field"} <= set(schemas["ErrorPublic"]["properties"])
    cancel = doc["paths"]["/api/workflows/instances/{instanceId}/cancel"]["post"]
    assert {"401", "403", "404", "409", "422"} <= set(cancel["responses"])
    assert any("HTTPBearer" in s for s in doc["components"]["securitySchemes"])


async def test_docs_served(api: Api) -> None:
    response = await api.client.get("/api/docs")
    assert response.status_code == 200
    assert "swagger" in response.text.lower()
