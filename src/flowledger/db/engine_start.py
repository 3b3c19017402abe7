"""The statements that create an instance and the token on its start node
(SPEC E-2, E-7; issue 15 item 2: the dialect choice stays in ``db/``).

Both copy the snapshot from the version's row inside the instance's
``INSERT`` (it never travels through Python). PostgreSQL: one statement —
the instance's ``INSERT … RETURNING id`` is a data-modifying CTE that the
token's ``INSERT … SELECT`` reads, so the token gets the new instance's id
in the same round trip. SQLite: the two inserts in turn."""

from __future__ import annotations

from typing import Any

from sqlalchemy import bindparam, select
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db.dialects import POSTGRESQL, dialect_name
from flowledger.db.engine_schema import workflow_definitions, workflow_instances, workflow_tokens

# the instance columns a start sets (the rest keep their defaults)
INSTANCE_COLUMNS = (
    "tenant_id",
    "definition_id",
    "definition_key",
    "definition_version",
    "status",
    "form_data",
    "initiator",
    "parent_instance_id",
    "parent_task_id",
    "trace_id",
    "created_at",
    "updated_at",
)
TOKEN_COLUMNS = ("node_key", "state", "fork_stack", "created_at")

_SNAPSHOT = (
    select(workflow_definitions.c.source)
    .where(workflow_definitions.c.id == bindparam("b_definition_id"))
    .scalar_subquery()
)
_INSERT_INSTANCE = (
    workflow_instances.insert()
    .values(
        snapshot=_SNAPSHOT,
        **{
            name: bindparam(f"i_{name}", type_=workflow_instances.c[name].type)
            for name in INSTANCE_COLUMNS
        },
    )
    .returning(workflow_instances.c.id)
)
_INSERT_TOKEN = workflow_tokens.insert().returning(workflow_tokens.c.id)
_NEW_INSTANCE = _INSERT_INSTANCE.cte("new_instance")
_PG_INSERT_BOTH = (
    workflow_tokens.insert()
    .from_select(
        ["instance_id", *TOKEN_COLUMNS],
        select(
            _NEW_INSTANCE.c.id,
            *(bindparam(f"t_{name}", type_=workflow_tokens.c[name].type) for name in TOKEN_COLUMNS),
        ),
    )
    .returning(workflow_tokens.c.instance_id, workflow_tokens.c.id)
    .add_cte(_NEW_INSTANCE)
)


async def insert_instance_and_start_token(
    conn: AsyncConnection, instance: dict[str, Any], token: dict[str, Any]
) -> tuple[int, int]:
    """Insert the instance (``instance``: :data:`INSTANCE_COLUMNS`) with the
    snapshot of its ``definition_id``, then its first token (``token``:
    :data:`TOKEN_COLUMNS`); (instance id, token id)."""
    params = {f"i_{name}": instance[name] for name in INSTANCE_COLUMNS}
    params["b_definition_id"] = instance["definition_id"]
    if dialect_name(conn) == POSTGRESQL:
        params.update({f"t_{name}": token[name] for name in TOKEN_COLUMNS})
        row = (await conn.execute(_PG_INSERT_BOTH, params)).one()
        return int(row.instance_id), int(row.id)
    instance_id = int((await conn.execute(_INSERT_INSTANCE, params)).scalar_one())
    token_id = (
        await conn.execute(_INSERT_TOKEN, {**token, "instance_id": instance_id})
    ).scalar_one()
    return instance_id, int(token_id)
