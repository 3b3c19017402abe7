"""Execution tokens and fork frames (SPEC E-4). A token is one execution path
at one node: ``active`` (moving, or holding a wait state), ``parked`` (waiting
at a join) or ``consumed``. A fork pushes a frame (its id, gateway kind and
the number of branches actually taken) onto each new token's stack; the
matching join fires when that many tokens with the frame on top are parked.

A token's move is buffered (:mod:`~flowledger.engine.write_buffer`): it is
written with the token's next state change, before the next token query, or
just before the commit — whichever comes first (issue 15 item 2); so is a
token's park at a join that does not fire yet. A fork (its frame, the
consumed token, the branches) and a join firing (the consumed arrivals, the
merged token) are one statement each on PostgreSQL
(:mod:`~flowledger.engine.store.tokens`). The
statements are built once, with bound parameters. The :class:`Token` value
itself is :mod:`~flowledger.engine.values`' (re-exported here)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import bindparam, select, update

from flowledger.db.engine_schema import workflow_forks, workflow_tokens
from flowledger.engine.step import Step
from flowledger.engine.store.tokens import Frame
from flowledger.engine.values import Token as Token
from flowledger.engine.write_buffer import buffer_of, flush_for_read, write_held
from flowledger.states import TokenState


def _token(row: Any) -> Token:
    return Token(int(row.id), row.node_key, list(row.fork_stack or []))


_GET = select(workflow_tokens).where(workflow_tokens.c.id == bindparam("token_id"))
_ONE = workflow_tokens.c.id == bindparam("b_token_id")
_MANY = workflow_tokens.c.id.in_(bindparam("b_token_ids", expanding=True))
_LIVE = (workflow_tokens.c.instance_id == bindparam("b_instance_id")) & (
    workflow_tokens.c.state != TokenState.CONSUMED
)
# the SET columns are the parameters' keys (one compiled form per key set)
_UPDATE_ONE = update(workflow_tokens).where(_ONE)
_UPDATE_MANY = update(workflow_tokens).where(_MANY)
_LIVE_TOKENS = select(workflow_tokens).where(_LIVE).order_by(workflow_tokens.c.id)
_CONSUME_LIVE = update(workflow_tokens).where(_LIVE)


async def create_token(step: Step, node_key: str, fork_stack: list[int]) -> Token:
    """Create one active token at ``node_key`` with ``fork_stack``."""
    _frame, ids = await step.store.tokens_replace(
        step.conn,
        instance_id=step.instance_id,
        consume=[],
        at_node=None,
        places=[node_key],
        fork_stack=fork_stack,
        now=step.now,
    )
    return Token(ids[0], node_key, list(fork_stack))


async def move_token(step: Step, token: Token, node_key: str) -> None:
    token.node_key = node_key
    buffer = buffer_of(step.conn)
    if buffer is not None:
        buffer.moves[token.id] = node_key
        return
    await step.conn.execute(_UPDATE_ONE, {"b_token_id": token.id, "node_key": node_key})


async def set_token_state(
    step: Step, token_ids: list[int], state: TokenState, *, at_node: str | None = None
) -> None:
    """Set the state of ``token_ids``. ``at_node``: every one of them stands
    at that node once moved, so their buffered moves are written in the same
    statement (a join firing)."""
    if not token_ids:
        return
    values: dict[str, Any] = {"state": state}
    if state is TokenState.CONSUMED:
        values["consumed_at"] = step.now
    await write_held(step.conn)  # the tokens may be a held fork's
    buffer = buffer_of(step.conn)
    if buffer is not None and at_node is not None:
        for token_id in token_ids:
            buffer.take_move(token_id)
        values["node_key"] = at_node
    elif buffer is not None and len(token_ids) == 1 and token_ids[0] in buffer.moves:
        values["node_key"] = buffer.take_move(token_ids[0])  # the move, in the same statement
    else:
        await flush_for_read(step.conn)
    if len(token_ids) == 1:
        await step.conn.execute(_UPDATE_ONE, {"b_token_id": token_ids[0], **values})
    else:
        await step.conn.execute(_UPDATE_MANY, {"b_token_ids": token_ids, **values})


async def park_token(step: Step, token: Token, node_key: str) -> None:
    """Park ``token`` at the join ``node_key`` (it waits for its siblings).
    Buffered with its move when the transaction has a write buffer: written
    with the moves, before the next token query (:func:`fork_and_parked`
    included) or just before the commit."""
    buffer = buffer_of(step.conn)
    if buffer is None:
        await set_token_state(step, [token.id], TokenState.PARKED)
        return
    token.node_key = node_key
    buffer.moves[token.id] = node_key
    buffer.parks.add(token.id)


def take_buffered_move(step: Step, token_id: int) -> str | None:
    """The token's buffered move (and park), taken out of the write buffer
    to be written with the token's next state change; None without one."""
    buffer = buffer_of(step.conn)
    return buffer.take_move(token_id) if buffer is not None else None


async def get_token(step: Step, token_id: int) -> tuple[Token, str] | None:
    await flush_for_read(step.conn)
    row = (await step.conn.execute(_GET, {"token_id": token_id})).first()
    return None if row is None else (_token(row), row.state)


async def live_tokens(step: Step) -> list[tuple[Token, str]]:
    await flush_for_read(step.conn)
    rows = (await step.conn.execute(_LIVE_TOKENS, {"b_instance_id": step.instance_id})).all()
    return [(_token(row), row.state) for row in rows]


async def consume_all_tokens(step: Step) -> None:
    await flush_for_read(step.conn)
    await step.conn.execute(
        _CONSUME_LIVE,
        {"b_instance_id": step.instance_id, "state": TokenState.CONSUMED, "consumed_at": step.now},
    )


async def _take_move(step: Step, token_id: int) -> str | None:
    """The buffered move of ``token_id``, taken out of the buffer to be
    written with the token's state change; without one, the other buffered
    moves are written first (as :func:`set_token_state` does)."""
    buffer = buffer_of(step.conn)
    if buffer is not None and token_id in buffer.moves:
        return buffer.take_move(token_id)
    await flush_for_read(step.conn)
    return None


async def fork_tokens(
    step: Step, token: Token, node_key: str, gateway: str, places: list[str]
) -> list[Token]:
    """Fork ``token`` at the gateway ``node_key``: push a frame expecting
    ``len(places)`` branches, consume the token (with its buffered move) and
    create one active token per place with the frame on top of its stack —
    one statement on PostgreSQL, or none of its own when the step reserved
    the ids (the rows then ride on the step's last statement). The branch
    tokens, in the order of places."""
    at_node = await _take_move(step, token.id)
    held = _held_fork(step, token, node_key, gateway, places, at_node)
    if held is not None:
        return held
    await write_held(step.conn)  # the forking token may be a held fork's
    frame_id, ids = await step.store.tokens_replace(
        step.conn,
        instance_id=step.instance_id,
        consume=[token.id],
        at_node=at_node,
        places=places,
        fork_stack=token.fork_stack,
        now=step.now,
        frame=Frame(node_key, gateway, len(places)),
    )
    assert frame_id is not None  # a fork pushes its frame
    stack = [*token.fork_stack, frame_id]
    return [Token(i, key, list(stack)) for i, key in zip(ids, places, strict=True)]


def _held_fork(
    step: Step, token: Token, node_key: str, gateway: str, places: list[str], at_node: str | None
) -> list[Token] | None:
    """The fork made with ids the step reserved (PostgreSQL), its rows held in
    the write buffer to ride on the step's last statement; None when it
    cannot be (too few ids reserved, no buffer, the forking token itself
    still held): the caller writes it now."""
    buffer = buffer_of(step.conn)
    if buffer is None or buffer.holds_token(token.id):
        return None
    ids = step.take_fork_ids(len(places))
    if ids is None:
        return None
    frame_id, token_ids = ids
    stack = [*token.fork_stack, frame_id]
    frame = {
        "id": frame_id,
        "instance_id": step.instance_id,
        "node_key": node_key,
        "gateway": gateway,
        "expected": len(places),
        "created_at": step.now,
    }
    rows = [
        {
            "id": token_id,
            "instance_id": step.instance_id,
            "node_key": key,
            "state": TokenState.ACTIVE.value,
            "fork_stack": stack,
            "created_at": step.now,
        }
        for token_id, key in zip(token_ids, places, strict=True)
    ]
    if not buffer.add_fork(frame, (token.id, at_node, step.now), rows):
        return None
    return [Token(i, key, list(stack)) for i, key in zip(token_ids, places, strict=True)]


async def join_tokens(
    step: Step, joined: list[Token], node_key: str, fork_stack: list[int]
) -> Token:
    """A join firing: consume the ``joined`` tokens where they stand, at
    ``node_key`` (their buffered moves go with it), and create the merged
    token there with ``fork_stack`` — one statement on PostgreSQL."""
    buffer = buffer_of(step.conn)
    if buffer is not None:
        for token in joined:
            buffer.take_move(token.id)
        await buffer.write_held()  # the joined tokens may be a held fork's
    _frame, ids = await step.store.tokens_replace(
        step.conn,
        instance_id=step.instance_id,
        consume=[token.id for token in joined],
        at_node=node_key,
        places=[node_key],
        fork_stack=fork_stack,
        now=step.now,
    )
    return Token(ids[0], node_key, list(fork_stack))


_FORK_AND_PARKED = (
    select(
        workflow_forks.c.gateway,
        workflow_forks.c.expected,
        workflow_tokens.c.id,
        workflow_tokens.c.node_key,
        workflow_tokens.c.fork_stack,
    )
    .select_from(
        workflow_forks.outerjoin(
            workflow_tokens,
            (workflow_tokens.c.instance_id == workflow_forks.c.instance_id)
            & (workflow_tokens.c.node_key == bindparam("node_key"))
            & (workflow_tokens.c.state == TokenState.PARKED),
        )
    )
    .where(workflow_forks.c.id == bindparam("fork_id"))
    .order_by(workflow_tokens.c.id)
)


async def fork_and_parked(step: Step, fork_id: int, node_key: str) -> tuple[Any, list[Token]]:
    """The fork frame ``fork_id`` (None if missing) and the tokens parked at
    ``node_key`` with that frame on top, in one statement. Buffered moves
    stay buffered unless a park is among them (this reads parked tokens
    only: a token without a buffered park is active or written); held
    forks are written first (the frame, or the parked tokens, may be
    theirs)."""
    buffer = buffer_of(step.conn)
    if buffer is not None and buffer.parks:
        await buffer.flush_for_read()
    elif buffer is not None:
        await buffer.write_held()
    rows = (
        await step.conn.execute(_FORK_AND_PARKED, {"fork_id": fork_id, "node_key": node_key})
    ).all()
    if not rows:
        return None, []
    parked = [_token(row) for row in rows if row.id is not None]
    return rows[0], [t for t in parked if t.fork_stack and t.fork_stack[-1] == fork_id]
