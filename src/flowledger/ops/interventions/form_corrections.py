"""Fix the data, then retry (SPEC O-3, E-7): an operator corrects form
fields of a running or suspended instance so that a trigger that failed on
bad data can be retried with the right data.

One engine step (the instance row locked first, SPEC L-13): the status is
checked (a finished instance is 409 ``instance_state``), the merged form is
validated against the snapshot's form schema (422 ``form_invalid`` naming
``form.<key>``), written, and recorded in ``workflow_form_writes`` with the
operator, ``source = "operator_correction"``, the changes and the reason,
plus a ``form_corrected`` trace row with the previous values and the
intervention (issue 31: ``form.<key>`` before → after). Nothing is
written when any check fails."""

from __future__ import annotations

from typing import Any

from flowledger.access.audit import AuditEntry, change_transaction
from flowledger.db.engine_schema import workflow_form_writes
from flowledger.engine import Engine, interventions
from flowledger.engine.forms import validate_form
from flowledger.engine.lifecycle import require_status
from flowledger.states import InstanceStatus

SOURCE = "operator_correction"


async def correct_form(
    engine: Engine,
    instance_id: int,
    changes: dict[str, Any],
    *,
    actor: str,
    reason: str,
    audit: AuditEntry | None = None,
) -> dict[str, Any]:
    """Apply ``changes``; returns ``{"previous": {...}, "form": {...}, "writeId": n}``.
    ``audit``: the caller's entry, whose row commits with the correction
    (with the ``writeId``)."""
    transaction = change_transaction(engine.db, audit, engine.clock.now)
    async with transaction as conn, engine.step(conn, instance_id, actor) as step:
        require_status(step, InstanceStatus.RUNNING, InstanceStatus.SUSPENDED)
        previous = {key: step.form.get(key) for key in changes}
        merged = validate_form(step.defn.form, {**step.form, **changes})
        await step.set_instance(form_data=merged)
        result = await conn.execute(
            workflow_form_writes.insert()
            .values(
                instance_id=instance_id,
                written_by=actor,
                source=SOURCE,
                changes=changes,
                reason=reason,
                created_at=step.now,
            )
            .returning(workflow_form_writes.c.id)
        )
        write_id = int(result.scalar_one())
        if audit is not None:
            audit.detail["writeId"] = write_id
        await step.trace(
            "form_corrected",
            detail={"fields": sorted(changes), "previous": previous, "reason": reason},
        )
        await interventions.record_in_step(
            step,
            interventions.FORM_CORRECTION,
            reason=reason,
            changes=[
                interventions.change(f"form.{key}", previous[key], merged.get(key))
                for key in sorted(changes)
            ],
        )
    return {"previous": previous, "form": merged, "writeId": write_id}
