"""Deploying definitions (SPEC E-1): full validation, then a new immutable
version per key and tenant. Versions are numbered 1, 2, …; two concurrent
deploys of one key cannot take the same number (unique constraint).
Starting an instance looks up only the version's id and number
(:func:`version_ref`); its source is read when the engine's snapshot cache
does not hold that version yet (:func:`source_of`)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, func, select
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db.engine_schema import workflow_definitions
from flowledger.definitions.model import ProcessDefinition
from flowledger.definitions.parse import DocumentLimits
from flowledger.definitions.problems import DefinitionError, Problem
from flowledger.definitions.validate import load_definition
from flowledger.engine.deadlines import escalation_targets_exist
from flowledger.engine.errors import DefinitionNotFound
from flowledger.engine.snapshots import snapshot_of


async def deploy(
    conn: AsyncConnection,
    source: str | bytes | dict[str, Any],
    *,
    tenant: str,
    actor: str,
    now: datetime,
    limits: DocumentLimits | None = None,
) -> dict[str, Any]:
    defn: ProcessDefinition = load_definition(source, limits=limits)
    await _subprocesses_exist(conn, defn, tenant)
    await escalation_targets_exist(conn, defn, tenant)
    latest = (
        await conn.execute(
            select(func.max(workflow_definitions.c.version)).where(
                workflow_definitions.c.tenant_id == tenant, workflow_definitions.c.key == defn.key
            )
        )
    ).scalar_one()
    version = (latest or 0) + 1
    row = {
        "tenant_id": tenant,
        "key": defn.key,
        "version": version,
        "name": defn.name,
        "source": snapshot_of(defn),
        "deployed_by": actor,
        "deployed_at": now,
    }
    row["id"] = (
        await conn.execute(
            workflow_definitions.insert().values(**row).returning(workflow_definitions.c.id)
        )
    ).scalar_one()
    return row


async def get_version(
    conn: AsyncConnection, key: str, *, tenant: str, version: int | None = None
) -> dict[str, Any]:
    query = select(workflow_definitions).where(
        workflow_definitions.c.tenant_id == tenant, workflow_definitions.c.key == key
    )
    if version is None:
        query = query.order_by(workflow_definitions.c.version.desc()).limit(1)
    else:
        query = query.where(workflow_definitions.c.version == version)
    row = (await conn.execute(query)).mappings().first()
    if row is None:
        what = f"{key!r}" + (f" version {version}" if version is not None else "")
        raise DefinitionNotFound(f"definition {what} not found", field="definitionKey")
    return dict(row)


_REF = select(workflow_definitions.c.id, workflow_definitions.c.version).where(
    workflow_definitions.c.tenant_id == bindparam("b_tenant"),
    workflow_definitions.c.key == bindparam("b_key"),
)
_LATEST_REF = _REF.order_by(workflow_definitions.c.version.desc()).limit(1)
_VERSION_REF = _REF.where(workflow_definitions.c.version == bindparam("b_version"))
_SOURCE = select(workflow_definitions.c.source).where(
    workflow_definitions.c.id == bindparam("b_id")
)


async def version_ref(
    conn: AsyncConnection, key: str, *, tenant: str, version: int | None = None
) -> tuple[int, int]:
    """The id and number of the latest version of ``key`` (or of ``version``)."""
    params: dict[str, Any] = {"b_tenant": tenant, "b_key": key}
    if version is None:
        query = _LATEST_REF
    else:
        query, params["b_version"] = _VERSION_REF, version
    row = (await conn.execute(query, params)).first()
    if row is None:
        what = f"{key!r}" + (f" version {version}" if version is not None else "")
        raise DefinitionNotFound(f"definition {what} not found", field="definitionKey")
    return int(row.id), int(row.version)


async def source_of(conn: AsyncConnection, definition_id: int) -> dict[str, Any]:
    """The source (the snapshot an instance freezes) of version ``definition_id``."""
    source: dict[str, Any] = (await conn.execute(_SOURCE, {"b_id": definition_id})).scalar_one()
    return source


async def _subprocesses_exist(conn: AsyncConnection, defn: ProcessDefinition, tenant: str) -> None:
    """Every subprocess names a definition deployed in the tenant (or this
    one): issue 17 item 5, ``subprocess_definition_missing``. One query."""
    wanted = {
        node.definition_key: node
        for node in defn.nodes
        if node.type == "subprocess" and node.definition_key and node.definition_key != defn.key
    }
    if not wanted:
        return
    found = set(
        (
            await conn.execute(
                select(workflow_definitions.c.key)
                .where(
                    workflow_definitions.c.tenant_id == tenant,
                    workflow_definitions.c.key.in_(sorted(wanted)),
                )
                .distinct()
            )
        ).scalars()
    )
    missing = [
        Problem(
            "subprocess_definition_missing",
            f"node {node.key!r}: no definition {key!r} is deployed in tenant {tenant!r}",
            node=node.key,
            field="definitionKey",
        )
        for key, node in wanted.items()
        if key not in found
    ]
    if missing:
        raise DefinitionError(missing)
