""":class:`CoreLedger`: the one shared SQLAlchemy Core implementation of
:class:`~flowledger.ledger.driver.protocol.LedgerDriver`, portable across
both dialects. The dialect drivers subclass it and override only what truly
differs."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.ledger.driver.core_control import ControlCore
from flowledger.ledger.driver.core_jobs import JobsCore
from flowledger.ledger.driver.core_maintenance import MaintenanceCore
from flowledger.ledger.driver.core_registry import RegistryCore
from flowledger.ledger.models import Fence, Outcome


class CoreLedger(JobsCore, ControlCore, MaintenanceCore, RegistryCore):
    """Every ledger transition in portable Core (claim: select the candidates
    ``FOR UPDATE SKIP LOCKED``, then lease them; batch success: two fenced
    statements in one transaction). Stateless: one instance serves a process."""

    name = "core"

    async def receipt_put_and_settle(
        self,
        conn: AsyncConnection,
        fence: Fence,
        operation_key: str,
        step_key: str,
        result: Any,
        outcome: Outcome,
        *,
        now: datetime,
        started_at: datetime | None = None,
        confirm_side_effect: bool = False,
    ) -> bool:
        """The receipt, then the settlement: two statements in portable Core."""
        await self.receipt_put(
            conn,
            fence,
            operation_key,
            step_key,
            result,
            now=now,
            confirm_side_effect=confirm_side_effect,
        )
        return await self.job_settle(conn, fence, outcome, now=now, started_at=started_at)

    async def close(self) -> None:
        """Nothing is held open."""
