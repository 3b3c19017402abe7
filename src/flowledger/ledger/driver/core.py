""":class:`CoreLedger`: the one shared SQLAlchemy Core implementation of
:class:`~flowledger.ledger.driver.protocol.LedgerDriver`, portable across
both dialects. The dialect drivers subclass it and override only what truly
differs."""

from __future__ import annotations

from flowledger.ledger.driver.core_control import ControlCore
from flowledger.ledger.driver.core_jobs import JobsCore
from flowledger.ledger.driver.core_maintenance import MaintenanceCore
from flowledger.ledger.driver.core_registry import RegistryCore


class CoreLedger(JobsCore, ControlCore, MaintenanceCore, RegistryCore):
    """Every ledger transition in portable Core (claim: select the candidates
    ``FOR UPDATE SKIP LOCKED``, then lease them; batch success: two fenced
    statements in one transaction). Stateless: one instance serves a process."""

    name = "core"

    async def close(self) -> None:
        """Nothing is held open."""
