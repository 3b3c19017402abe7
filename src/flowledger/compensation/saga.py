"""Saga rollback registration (SPEC C-7).

When a node fails with ``failurePolicy.sagaRollback``, :func:`register_saga`
looks at what this instance already did outside: its ``succeeded``
``trigger_dispatch``, ``external_dispatch`` and ``webhook_delivery`` jobs,
newest job id first. Jobs whose settled attempt was a handler's ``skipped``
(nothing was sent) do not count. Each node is taken once, and only when it
has a key, is not the failed node, and declares a reverse ``compensation``
action in the instance's frozen definition.

Every eligible node gets its own pending ticket (kind ``saga``) and its own
``compensation_action`` job, both under the idempotency key
``saga:<instanceId>:<nodeKey>`` — registering again (a second failure, a
retried step) creates nothing new. Id-descending is the *registration*
order: the actions run concurrently on the outbound pool and retry
independently; a reverse action that depends on another's completion must be
orchestrated by the receiver or by explicit process nodes.
"""

from __future__ import annotations

from sqlalchemy import and_, exists, select

from flowledger.compensation.actions import action_document, enqueue_action
from flowledger.compensation.tickets import open_ticket
from flowledger.db.schema import workflow_job_executions as executions
from flowledger.db.schema import workflow_jobs as jobs
from flowledger.definitions.model import Node
from flowledger.engine.step import Step
from flowledger.states import AttemptStatus, JobStatus

SAGA_JOB_TYPES = ("trigger_dispatch", "external_dispatch", "webhook_delivery")


def saga_key(instance_id: int, node_key: str) -> str:
    return f"saga:{instance_id}:{node_key}"


async def _succeeded_nodes(step: Step, failed_node_key: str) -> list[str]:
    """Node keys of the instance's succeeded outbound jobs, by job id descending."""
    skipped = exists().where(
        and_(
            executions.c.job_id == jobs.c.id,
            executions.c.generation == jobs.c.generation,
            executions.c.status == AttemptStatus.SKIPPED,
        )
    )
    rows = await step.conn.execute(
        select(jobs.c.node_key)
        .where(
            jobs.c.instance_id == step.instance_id,
            jobs.c.status == JobStatus.SUCCEEDED,
            jobs.c.type.in_(SAGA_JOB_TYPES),
            jobs.c.node_key.is_not(None),
            jobs.c.node_key != failed_node_key,
            ~skipped,
        )
        .order_by(jobs.c.id.desc())
    )
    return [str(row.node_key) for row in rows]


async def register_saga(step: Step, failed: Node, *, error: str) -> list[int]:
    """Register the reverse actions of C-7; return the ticket ids in
    registration order (existing tickets included, nothing created twice)."""
    seen: set[str] = set()
    ticket_ids: list[int] = []
    for node_key in await _succeeded_nodes(step, failed.key):
        if node_key in seen:
            continue
        seen.add(node_key)
        if not step.defn.has_node(node_key):
            continue
        node = step.defn.node(node_key)
        if node.compensation is None:
            continue
        action = action_document(node.compensation)
        key = saga_key(step.instance_id, node_key)
        ticket_id, created = await open_ticket(
            step.conn,
            tenant_id=str(step.instance["tenant_id"]),
            instance_id=step.instance_id,
            failed_node_key=failed.key,
            node_key=node_key,
            kind="saga",
            error=error,
            action=action,
            repair_task_id=None,
            idempotency_key=key,
            actor=step.actor,
            now=step.now,
        )
        ticket_ids.append(ticket_id)
        if not created:
            continue
        job_id = await enqueue_action(
            step.conn,
            ticket_id=ticket_id,
            tenant_id=str(step.instance["tenant_id"]),
            instance_id=step.instance_id,
            trace_id=step.trace_id,
            node_key=node_key,
            action=action,
            error=error,
            now=step.now,
            ledger=step.store.ledger,
            idempotency_key=key,
        )
        await step.trace(
            "saga_registered",
            node_key=node_key,
            job_id=job_id,
            detail={"ticketId": ticket_id, "failedNodeKey": failed.key},
        )
    return ticket_ids
