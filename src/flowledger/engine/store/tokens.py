"""The statements that replace tokens at a gateway (issue 15 item 2, SPEC
E-4; issue 28 item 5: the dialect choice stays in the engine store): a fork — its frame
row, the forking token consumed, one active token per branch with the frame
on top of its fork stack — and a join firing — the arrived tokens consumed
at the join, the merged token created — and one token consumed, counting
the instance's live tokens left (:func:`consume_token_row`).

PostgreSQL: one statement each (data-modifying CTEs: the frame's id goes
into the branches' fork stacks in the same statement). SQLite (in process):
the same writes one statement at a time, in the same order. Either way the
new tokens' ids ascend in the order their places were given, and they are
returned in that order."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import BigInteger, Integer, String, bindparam, literal_column, text, update
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db.engine_schema import workflow_forks, workflow_tokens
from flowledger.db.types import UTCDateTime
from flowledger.states import TokenState

ACTIVE = TokenState.ACTIVE.value
CONSUMED = TokenState.CONSUMED.value


@dataclass(frozen=True)
class Frame:
    """A fork frame to push: the gateway node, its kind and the branches taken."""

    node_key: str
    gateway: str
    expected: int


_BRANCHES = (
    "SELECT :instance_id, b.node_key, '" + ACTIVE + "', "
    "CAST(:fork_stack AS jsonb){frame}, :now "
    "FROM ROWS FROM (json_to_recordset(CAST(:places AS json)) AS (node_key text)) "
    "WITH ORDINALITY AS b(node_key, n){frame_from} ORDER BY b.n"
)
_INSERT_TOKENS = (
    "INSERT INTO workflow_tokens (instance_id, node_key, state, fork_stack, created_at) "
)
# by instance, then id: an index scan of the instance's tokens in the plan
# cached on a never-analyzed table (a bare ``id = ANY(…)``, estimated at ten
# rows, is planned there as a sequential scan, and psycopg's prepared
# statement keeps that plan as the table grows until an ANALYZE replans)
_CONSUME = (
    "UPDATE workflow_tokens SET state = '" + CONSUMED + "', consumed_at = :now, "
    "node_key = COALESCE(:at_node, node_key) "
    "WHERE instance_id = :instance_id AND id = ANY(:consume)"
)
_TYPES = (
    bindparam("now", type_=UTCDateTime()),
    bindparam("instance_id", type_=BigInteger()),
    bindparam("at_node", type_=String()),
    bindparam("consume", type_=ARRAY(BigInteger())),
)
_PG_FORK = text(
    "WITH frame AS (INSERT INTO workflow_forks (instance_id, node_key, gateway, expected, "
    "created_at) VALUES (:instance_id, :frame_node, :gateway, :expected, :now) RETURNING id), "
    f"consumed AS ({_CONSUME}) "
    + _INSERT_TOKENS
    + _BRANCHES.format(frame=" || to_jsonb(frame.id)", frame_from=", frame")
    + " RETURNING id, fork_stack"
).bindparams(*_TYPES)
_PG_JOIN = text(
    f"WITH consumed AS ({_CONSUME}) "
    + _INSERT_TOKENS
    + _BRANCHES.format(frame="", frame_from="")
    + " RETURNING id"
).bindparams(*_TYPES)

_PUSH_FORK = workflow_forks.insert().returning(workflow_forks.c.id)
_CONSUME_MANY = update(workflow_tokens).where(
    workflow_tokens.c.id.in_(bindparam("b_token_ids", expanding=True))
)
_INSERT = workflow_tokens.insert().returning(workflow_tokens.c.id, sort_by_parameter_order=True)


async def pg_replace_tokens(
    conn: AsyncConnection,
    *,
    instance_id: int,
    consume: list[int],
    at_node: str | None,
    places: list[str],
    fork_stack: list[int],
    now: datetime,
    frame: Frame | None = None,
) -> tuple[int | None, list[int]]:
    """:func:`core_replace_tokens` in one statement (PostgreSQL: a fork's
    frame id comes back on its tokens); without places, as the core does."""
    if places:
        params: dict[str, Any] = {
            "instance_id": instance_id,
            "consume": consume,
            "at_node": at_node,
            "places": json.dumps([{"node_key": key} for key in places]),
            "fork_stack": json.dumps(fork_stack),
            "now": now,
        }
        if frame is None:
            joined = (await conn.execute(_PG_JOIN, params)).all()
            return None, sorted(int(row.id) for row in joined)
        params.update(frame_node=frame.node_key, gateway=frame.gateway, expected=frame.expected)
        forked = (await conn.execute(_PG_FORK, params)).all()
        frame_ids = {int(row.fork_stack[-1]) for row in forked}
        assert len(frame_ids) == 1, "every branch carries the one new frame"
        return frame_ids.pop(), sorted(int(row.id) for row in forked)
    return await core_replace_tokens(
        conn,
        instance_id=instance_id,
        consume=consume,
        at_node=at_node,
        places=places,
        fork_stack=fork_stack,
        now=now,
        frame=frame,
    )


async def core_replace_tokens(
    conn: AsyncConnection,
    *,
    instance_id: int,
    consume: list[int],
    at_node: str | None,
    places: list[str],
    fork_stack: list[int],
    now: datetime,
    frame: Frame | None = None,
) -> tuple[int | None, list[int]]:
    """Consume the tokens ``consume`` (moved to ``at_node`` as they are, when
    given) and create one active token per node key in ``places``, whose
    fork stack is ``fork_stack`` with the new frame on top when ``frame`` is
    given (a fork), one statement at a time. The frame's id (None without
    one) and the new tokens' ids, in the order of ``places``."""
    frame_id: int | None = None
    stack = list(fork_stack)
    if frame is not None:
        values = {
            "instance_id": instance_id,
            "node_key": frame.node_key,
            "gateway": frame.gateway,
            "expected": frame.expected,
            "created_at": now,
        }
        frame_id = int((await conn.execute(_PUSH_FORK, values)).scalar_one())
        stack.append(frame_id)
    if consume:
        change: dict[str, Any] = {"b_token_ids": consume, "state": CONSUMED, "consumed_at": now}
        if at_node is not None:
            change["node_key"] = at_node
        await conn.execute(_CONSUME_MANY, change)
    if not places:
        return frame_id, []
    tokens = [
        {
            "instance_id": instance_id,
            "node_key": key,
            "state": ACTIVE,
            "fork_stack": stack,
            "created_at": now,
        }
        for key in places
    ]
    ids = (await conn.execute(_INSERT, tokens)).scalars().all()
    return frame_id, [int(token_id) for token_id in ids]


# consume one token and count the live ones left, in one statement (the
# subquery leaves the consumed token out, so it does not matter whether it
# sees the row before or after the update); spelled out because SQLAlchemy
# renders RETURNING columns unqualified on SQLite. The SET columns are the
# parameters' keys.
_CONSUME_COUNTING = (
    update(workflow_tokens)
    .where(workflow_tokens.c.id == bindparam("b_token_id"))
    .returning(
        literal_column(
            "(SELECT count(*) FROM workflow_tokens AS other "
            "WHERE other.instance_id = workflow_tokens.instance_id "
            f"AND other.state != '{CONSUMED}' "
            "AND other.id != workflow_tokens.id)",
            Integer(),
        ).label("live_left")
    )
)


async def consume_token_row(
    conn: AsyncConnection, token_id: int, *, now: datetime, at_node: str | None = None
) -> int:
    """Consume token ``token_id`` (moved to ``at_node`` as it is, when
    given); the number of its instance's live tokens left."""
    values: dict[str, Any] = {"b_token_id": token_id, "state": CONSUMED, "consumed_at": now}
    if at_node is not None:
        values["node_key"] = at_node
    row = (await conn.execute(_CONSUME_COUNTING, values)).one()
    return int(row.live_left)
