"""The statements that create an instance and the token on its start node
(SPEC E-2, E-7; issue 28 item 5: the dialect choice stays in the engine store).

Both copy the snapshot from the version's row inside the instance's
``INSERT`` (it never travels through Python). PostgreSQL: one statement —
the instance's ``INSERT … RETURNING id`` is a data-modifying CTE that the
token's ``INSERT … SELECT`` reads, so the token gets the new instance's id
in the same round trip, and ids are reserved for the start's step
(:mod:`~flowledger.engine.store.reserved_ids`). SQLite: the two inserts in turn.

``latest_of`` (a start of "the latest version"): the instance is inserted
only while its ``definition_id`` is still the latest version of its tenant
and key — checked in the insert itself, so a caller may start from a version
id it remembered instead of reading it first (issue 15: one round trip less
per start); nothing is inserted when a newer version was deployed since."""

from __future__ import annotations

from typing import Any

from sqlalchemy import bindparam, select
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db.engine_schema import workflow_definitions, workflow_instances, workflow_tokens
from flowledger.engine.store.reserved_ids import Reserved, reserve_columns, take_reserved

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
# the same insert, only while definition_id is its tenant's and key's latest version
_LATEST_ID = (
    select(workflow_definitions.c.id)
    .where(
        workflow_definitions.c.tenant_id == bindparam("i_tenant_id"),
        workflow_definitions.c.key == bindparam("i_definition_key"),
    )
    .order_by(workflow_definitions.c.version.desc())
    .limit(1)
    .scalar_subquery()
)
_INSERT_INSTANCE_IF_LATEST = (
    workflow_instances.insert()
    .from_select(
        ["snapshot", *INSTANCE_COLUMNS],
        select(
            _SNAPSHOT,
            *(
                bindparam(f"i_{name}", type_=workflow_instances.c[name].type)
                for name in INSTANCE_COLUMNS
            ),
        ).where(bindparam("b_definition_id") == _LATEST_ID),
    )
    .returning(workflow_instances.c.id)
)
_INSERT_TOKEN = workflow_tokens.insert().returning(workflow_tokens.c.id)


def _pg_insert_both(insert_instance: Any) -> Any:
    new_instance = insert_instance.cte("new_instance")
    return (
        workflow_tokens.insert()
        .from_select(
            ["instance_id", *TOKEN_COLUMNS],
            select(
                new_instance.c.id,
                *(
                    bindparam(f"t_{name}", type_=workflow_tokens.c[name].type)
                    for name in TOKEN_COLUMNS
                ),
            ),
        )
        .returning(workflow_tokens.c.instance_id, workflow_tokens.c.id, *reserve_columns())
        .add_cte(new_instance)
    )


_PG_INSERT_BOTH = _pg_insert_both(_INSERT_INSTANCE)
_PG_INSERT_BOTH_IF_LATEST = _pg_insert_both(_INSERT_INSTANCE_IF_LATEST)


Started = tuple[int, int, Reserved]  # (instance id, start token id, ids reserved)


def _instance_params(instance: dict[str, Any]) -> dict[str, Any]:
    params = {f"i_{name}": instance[name] for name in INSTANCE_COLUMNS}
    params["b_definition_id"] = instance["definition_id"]
    return params


async def pg_insert_instance_and_start_token(
    conn: AsyncConnection,
    instance: dict[str, Any],
    token: dict[str, Any],
    *,
    latest_of: bool = False,
) -> Started | None:
    """:func:`core_insert_instance_and_start_token` in one statement, which
    also reserves ids for the start's step
    (:mod:`~flowledger.engine.store.reserved_ids`)."""
    params = _instance_params(instance)
    params.update({f"t_{name}": token[name] for name in TOKEN_COLUMNS})
    both = _PG_INSERT_BOTH_IF_LATEST if latest_of else _PG_INSERT_BOTH
    row = (await conn.execute(both, params)).mappings().first()
    if row is None:
        return None
    values = dict(row)
    return int(values["instance_id"]), int(values["id"]), take_reserved(values)


async def core_insert_instance_and_start_token(
    conn: AsyncConnection,
    instance: dict[str, Any],
    token: dict[str, Any],
    *,
    latest_of: bool = False,
) -> Started | None:
    """Insert the instance (``instance``: :data:`INSTANCE_COLUMNS`) with the
    snapshot of its ``definition_id``, then its first token (``token``:
    :data:`TOKEN_COLUMNS`); (instance id, token id, the ids reserved for the
    start's step: none here). ``latest_of``: only if ``definition_id`` is the
    latest version of the instance's tenant and ``definition_key`` — None
    (nothing inserted) when it is not."""
    params = _instance_params(instance)
    insert = _INSERT_INSTANCE_IF_LATEST if latest_of else _INSERT_INSTANCE
    instance_id = (await conn.execute(insert, params)).scalar_one_or_none()
    if instance_id is None:
        return None
    token_id = (
        await conn.execute(_INSERT_TOKEN, {**token, "instance_id": int(instance_id)})
    ).scalar_one()
    return int(instance_id), int(token_id), Reserved()
