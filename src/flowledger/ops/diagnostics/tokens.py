"""The token view of an instance's diagnostics (SPEC O-10, E-4): every token
with its state, node and fork frames, and for every open join **which
branches have arrived and which are still awaited**, by node key.

A fork frame is open while a live (active or parked) token carries it. Its
branches are the edges the fork sent tokens along (the ``token_forked``
trace event: the branch tokens and their first node keys); a branch is named
by the key of its first node. A live token belongs to the branch whose
token it descends from (its own id, or — after a nested fork or join — the
ancestry recorded by ``token_forked`` / ``token_joined`` / ``force_jump``). Arrived: the
branches with a token parked at the join under that frame. Awaited: the
others, each with the nodes where its live tokens are now. The join node is
where the arrived tokens are parked; while none has arrived, the nearest
join of the same gateway kind downstream of the branches.

Set-based: tokens (``ix_workflow_tokens_instance_state``), frames
(``ix_workflow_forks_instance``) and the fork/join trace events
(``ix_workflow_trace_instance``), one query each."""

from __future__ import annotations

from collections import deque
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db.engine_schema import workflow_forks as forks
from flowledger.db.engine_schema import workflow_tokens as tokens
from flowledger.db.engine_schema import workflow_trace as trace
from flowledger.definitions.model import ProcessDefinition
from flowledger.states import TokenState


def _join_node(defn: ProcessDefinition, starts: list[str], gateway: str) -> str | None:
    """The nearest node of kind ``gateway`` with two or more incoming edges
    reachable from the first branch start (breadth first)."""
    seen: set[str] = set()
    queue = deque(starts[:1])
    while queue:
        key = queue.popleft()
        if key in seen or not defn.has_node(key):
            continue
        seen.add(key)
        node = defn.node(key)
        if node.type == gateway and len(defn.incoming(key)) >= 2:
            return key
        queue.extend(edge.to for edge in defn.outgoing(key))
    return None


async def tokens_view(
    conn: AsyncConnection, instance_id: int, defn: ProcessDefinition
) -> dict[str, Any]:
    token_rows = (
        (
            await conn.execute(
                select(tokens).where(tokens.c.instance_id == instance_id).order_by(tokens.c.id)
            )
        )
        .mappings()
        .all()
    )
    frames = {
        int(r["id"]): dict(r)
        for r in (
            await conn.execute(
                select(forks).where(forks.c.instance_id == instance_id).order_by(forks.c.id)
            )
        )
        .mappings()
        .all()
    }
    events = (
        await conn.execute(
            select(trace.c.event, trace.c.token_id, trace.c.node_key, trace.c.detail)
            .where(
                trace.c.instance_id == instance_id,
                trace.c.event.in_(["token_forked", "token_joined", "force_jump"]),
            )
            .order_by(trace.c.id)
        )
    ).all()
    by_id = {int(r["id"]): r for r in token_rows}
    parent: dict[int, int] = {}
    branches_of: dict[int, list[tuple[str, int]]] = {}  # frame -> [(start node, token)]
    for event, token_id, _node_key, detail in events:
        detail = detail or {}
        if event == "token_forked":
            ids = [int(b) for b in detail.get("branches", [])]
            for branch in ids:
                if token_id is not None:
                    parent[branch] = int(token_id)
            if ids and ids[0] in by_id and by_id[ids[0]]["fork_stack"]:
                frame_of = int(by_id[ids[0]]["fork_stack"][-1])
                branches_of[frame_of] = list(zip(detail.get("to", []), ids, strict=False))
        elif token_id is not None and detail.get("joined"):
            parent[int(token_id)] = int(detail["joined"][0])
        elif token_id is not None and detail.get("consumedTokens"):  # a force jump
            parent[int(token_id)] = int(detail["consumedTokens"][0])

    def branch_of(token_id: int, frame: int) -> str | None:
        members = {tok: start for start, tok in branches_of.get(frame, [])}
        current: int | None = token_id
        for _ in range(10_000):
            if current is None:
                return None
            if current in members:
                return members[current]
            current = parent.get(current)
        return None

    public = []
    for row in token_rows:
        public.append(
            {
                "id": int(row["id"]),
                "nodeKey": row["node_key"],
                "state": row["state"],
                "forkStack": [
                    {
                        "frameId": int(f),
                        "forkNode": frames[int(f)]["node_key"] if int(f) in frames else None,
                        "gateway": frames[int(f)]["gateway"] if int(f) in frames else None,
                        "expected": frames[int(f)]["expected"] if int(f) in frames else None,
                    }
                    for f in row["fork_stack"] or []
                ],
                "createdAt": row["created_at"],
                "consumedAt": row["consumed_at"],
            }
        )

    live = [r for r in token_rows if r["state"] != TokenState.CONSUMED]
    joins = []
    for frame_id, frame in frames.items():
        carriers = [r for r in live if frame_id in (r["fork_stack"] or [])]
        if not carriers:
            continue
        arrived_rows = [
            r
            for r in carriers
            if r["state"] == TokenState.PARKED and (r["fork_stack"] or [])[-1] == frame_id
        ]
        starts = [start for start, _tok in branches_of.get(frame_id, [])]
        join_node = (
            arrived_rows[0]["node_key"]
            if arrived_rows
            else _join_node(defn, starts, frame["gateway"])
        )
        arrived = [
            {
                "branch": branch_of(int(r["id"]), frame_id),
                "tokenId": int(r["id"]),
                "atNode": r["node_key"],
            }
            for r in arrived_rows
        ]
        arrived_branches = {a["branch"] for a in arrived}
        awaited = []
        for start in starts:
            if start in arrived_branches:
                continue
            mine = [
                r
                for r in carriers
                if r not in arrived_rows and branch_of(int(r["id"]), frame_id) == start
            ]
            awaited.append(
                {
                    "branch": start,
                    "tokenIds": [int(r["id"]) for r in mine],
                    "atNodes": sorted({str(r["node_key"]) for r in mine}),
                }
            )
        joins.append(
            {
                "joinNode": join_node,
                "forkNode": frame["node_key"],
                "frameId": frame_id,
                "gateway": frame["gateway"],
                "expected": int(frame["expected"]),
                "arrived": arrived,
                "awaited": awaited,
            }
        )
    return {"items": public, "joins": joins}
