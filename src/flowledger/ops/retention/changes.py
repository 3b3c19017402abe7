"""The operator's retention actions (SPEC O-20, A-2), each audited: changing
policies (``retention.policies_update``: one transaction holding every change
and the audit row) and a run now (``retention.run``: the run commits per
batch, its audit row is written when it ends)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from flowledger.access.audit import AuditContext, AuditEntry, audited, audited_change
from flowledger.access.callers import Caller
from flowledger.errors import FlowledgerError
from flowledger.ops.retention import policies as rp
from flowledger.ops.retention import runs


class DuplicatePolicy(FlowledgerError):
    code = "duplicate_policy"


async def update_policies(
    ctx: AuditContext, caller: Caller, changes: list[tuple[str, rp.PolicyChange]]
) -> None:
    """Apply every ``(field path, change)`` or none; an unknown or twice-named
    policy is 422 naming its field."""
    names = ",".join(c.name for _field, c in changes)
    entry = AuditEntry.by(caller, "retention.policies_update", "retention_policy", names)
    async with audited_change(ctx, entry) as conn:
        seen: set[str] = set()
        for field, change in changes:
            rp.check_name(change.name, field=field)
            if change.name in seen:
                raise DuplicatePolicy(f"policy {change.name!r} is named twice", field=field)
            seen.add(change.name)
        entry.detail["changes"] = [
            {"name": c.name, "enabled": c.enabled, "keepDays": c.keep_days} for _f, c in changes
        ]
        await rp.update_policies(
            conn, [c for _f, c in changes], actor=caller.user_id, now=ctx.now()
        )


async def run_now(
    ctx: AuditContext, caller: Caller, policies: Sequence[str] | None
) -> dict[str, Any]:
    """Run the enabled policies (or those named) now; answers the recorded
    run. 409 ``retention_running`` while another run is going."""
    async with audited(ctx, caller, "retention.run", "retention_run") as entry:
        run = await runs.run_retention(
            ctx.db, now=ctx.now(), trigger="manual", actor=caller.user_id, policies=policies
        )
        entry.target_id = str(run["id"])
        entry.detail.update(rowsRemoved=run["rowsRemoved"], policies=policies)
    return run
