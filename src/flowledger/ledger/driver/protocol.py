"""The :class:`LedgerDriver` protocol: every state transition and query of
the job ledger (SPEC L-1 … L-24) as one named method, in River's noun-verb
style. It is the only writer of ``workflow_jobs``,
``workflow_job_executions``, ``workflow_job_effects``,
``system_scheduler_nodes`` and ``system_leader_leases``.

Transactions are visible in the signature: a method whose first parameter is
``conn`` runs inside the caller's transaction (and publishes its wake hints
when that transaction commits); a method whose first parameter is ``db``
opens and commits its own. Every method takes an explicit ``now`` where time
matters.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime, timedelta
from typing import Any, Protocol

from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db.database import Database
from flowledger.ledger.models import (
    ClaimBatch,
    ClaimedJob,
    EnqueueResult,
    Fence,
    JobPurge,
    JobSpec,
    NodeInfo,
    Outcome,
    PurgeCursor,
    RescueReport,
)
from flowledger.ledger.types import JobTypeRegistry


class LedgerDriver(Protocol):
    """One storage implementation of the ledger."""

    name: str

    # --- jobs: insert, claim, settle (the hot path) --------------------------------
    async def job_insert(
        self,
        conn: AsyncConnection,
        spec: JobSpec,
        *,
        now: datetime,
        job_types: JobTypeRegistry | None = None,
    ) -> EnqueueResult:
        """Enqueue one job; an idempotencyKey that already names a job returns
        it. A spec naming its type by a string needs ``job_types`` to resolve it."""

    async def jobs_insert(
        self,
        conn: AsyncConnection,
        specs: Sequence[JobSpec],
        *,
        now: datetime,
        job_types: JobTypeRegistry | None = None,
        ids: Sequence[int] | None = None,
    ) -> list[EnqueueResult]:
        """Enqueue many jobs in a few statements, whether or not they carry
        idempotencyKeys; per spec, in order, what :meth:`job_insert` would
        answer (a key already used — in the table or earlier in ``specs`` —
        gives that job with ``created=False``). One wake hint per pool that
        got a new job, published when the transaction commits.

        ``ids`` (specs without idempotencyKeys): the jobs' ids, one per spec,
        drawn by the caller from the jobs' id sequence beforehand (the
        engine reserves them in a statement it sends anyway), so that rows
        naming the jobs can be written without waiting for the insert (or
        in the same statement: a store composes the insert's parts,
        :mod:`~flowledger.ledger.driver.postgres_parts`, with its own)."""

    async def jobs_claim(
        self,
        db: Database,
        *,
        pool: str,
        limit: int,
        node_id: str,
        now: datetime,
        order: str = "priority",
        lease_ms: int = ...,
    ) -> list[ClaimedJob]:
        """pending → running for up to ``limit`` due jobs of ``pool``, one attempt row each."""

    async def jobs_claim_batch(
        self,
        db: Database,
        *,
        pool: str,
        limit: int,
        node_id: str,
        now: datetime,
        order: str = "priority",
        lease_ms: int = ...,
    ) -> ClaimBatch:
        """:meth:`jobs_claim`, and — where the claim's own statement can tell
        it (the PostgreSQL and SQLite fast paths) — when the earliest pending
        job of ``pool`` not claimed by it falls due, so a pool need not ask
        :meth:`jobs_next_due` in another round trip."""

    async def jobs_next_due(self, db: Database, *, pool: str) -> datetime | None:
        """When the earliest pending job of ``pool`` falls due."""

    async def job_settle(
        self,
        conn: AsyncConnection,
        fence: Fence,
        outcome: Outcome,
        *,
        now: datetime,
        started_at: datetime | None = None,
    ) -> bool:
        """Settle one attempt, fenced; False when fenced out (nothing written)."""

    async def jobs_settle(
        self, db: Database, items: Sequence[tuple[ClaimedJob, Outcome]], *, now: datetime
    ) -> set[int]:
        """Settle a batch; the ids actually settled."""

    # --- fencing ----------------------------------------------------------------
    async def job_lock_fenced(self, conn: AsyncConnection, fence: Fence, *, now: datetime) -> None:
        """Lock the job row if ``fence`` still owns it, else raise LeaseLostError."""

    async def jobs_renew_leases(
        self, db: Database, claimed: Sequence[ClaimedJob], *, now: datetime, lease_ms: int
    ) -> set[int]:
        """Extend the leases still owned; their ids."""

    async def job_mark_side_effect(self, db: Database, fence: Fence, *, now: datetime) -> None:
        """SPEC L-17: record that an unsafe external write is about to be sent."""

    # --- control from outside the executor ---------------------------------------
    async def job_retry(
        self,
        conn: AsyncConnection,
        job_id: int,
        *,
        now: datetime,
        payload: dict[str, Any] | None = None,
        run_at: datetime | None = None,
    ) -> None:
        """failed|dead|canceled → pending, a new generation."""

    async def job_cancel(
        self, conn: AsyncConnection, job_id: int, *, now: datetime, reason: str = ...
    ) -> None:
        """Any non-terminal status → canceled, a new generation."""

    async def jobs_pause(
        self, conn: AsyncConnection, instance_id: int, *, types: Collection[str], now: datetime
    ) -> list[int]:
        """The instance's jobs of ``types`` → paused (or dead after an unsafe call)."""

    async def jobs_resume(
        self, conn: AsyncConnection, instance_id: int, *, types: Collection[str], now: datetime
    ) -> list[int]:
        """The instance's paused jobs of ``types`` → pending with their remaining wait."""

    async def jobs_cancel_for_instance(
        self,
        conn: AsyncConnection,
        instance_id: int,
        *,
        types: Collection[str],
        now: datetime,
        reason: str = ...,
        keep_job_id: int | None = None,
    ) -> list[int]:
        """SPEC L-22: cancel the instance's live jobs of ``types`` (the
        advancement types that could still wake)."""

    async def jobs_cancel_advancement(
        self,
        conn: AsyncConnection,
        instance_id: int,
        *,
        types: Collection[str],
        now: datetime,
        reason: str,
        task_ids: list[int] | None = None,
        dry_run: bool = False,
    ) -> list[dict[str, Any]]:
        """Cancel the jobs of ``types`` (all, or of ``task_ids``) for a force jump."""

    async def jobs_retarget(
        self, conn: AsyncConnection, moves: dict[int, str], *, now: datetime
    ) -> None:
        """Point jobs at other nodes, times kept (an instance migration, issue 30)."""

    async def jobs_mark_replay_batch(
        self, conn: AsyncConnection, job_ids: list[int], batch_id: str | None
    ) -> None:
        """Tag jobs with (or clear) the replay batch that retried them (SPEC O-4)."""

    # --- maintenance ------------------------------------------------------------
    async def jobs_rescue(
        self, conn: AsyncConnection, *, now: datetime, limit: int = ...
    ) -> RescueReport:
        """running with an expired lease or deadline → pending | dead; republish hints."""

    async def jobs_reclaim(
        self, conn: AsyncConnection, job_ids: list[int], *, now: datetime
    ) -> RescueReport:
        """The rescue of exactly the listed jobs (targeted recovery)."""

    async def jobs_wake(
        self, conn: AsyncConnection, job_ids: list[int], *, now: datetime
    ) -> list[int]:
        """Republish the wake hints of the listed jobs still pending and due."""

    async def jobs_purge_count(self, conn: AsyncConnection, *, before: datetime) -> dict[str, int]:
        """What :meth:`jobs_purge_batch` would remove, per table."""

    async def jobs_purge_batch(
        self,
        conn: AsyncConnection,
        *,
        before: datetime,
        after: PurgeCursor | None = None,
        limit: int = 1000,
    ) -> JobPurge:
        """Remove one batch of settled jobs with their attempts and receipts
        (keyset ``after``: the previous batch's cursor)."""

    # --- receipts ---------------------------------------------------------------
    async def receipt_get(
        self, conn: AsyncConnection, operation_key: str, step_key: str
    ) -> tuple[bool, Any]:
        """(found, result) of the committed receipt of a step."""

    async def job_lock_fenced_receipt(
        self,
        conn: AsyncConnection,
        fence: Fence,
        operation_key: str,
        step_key: str,
        *,
        now: datetime,
    ) -> tuple[bool, Any]:
        """:meth:`job_lock_fenced` and :meth:`receipt_get` in one round trip:
        lock the job row if ``fence`` still owns it, else raise
        LeaseLostError; (found, result) of the step's committed receipt."""

    async def receipt_put(
        self,
        conn: AsyncConnection,
        fence: Fence,
        operation_key: str,
        step_key: str,
        result: Any,
        *,
        now: datetime,
        confirm_side_effect: bool = False,
    ) -> None:
        """Commit a step's receipt with the caller's (fenced) business write."""

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
        """:meth:`receipt_put` and :meth:`job_settle` of the same attempt in
        the caller's (fenced) transaction — one statement on PostgreSQL for a
        plain success. False when fenced out: the caller must roll back."""

    # --- nodes and the leader lease -----------------------------------------------
    async def node_register(self, conn: AsyncConnection, node: NodeInfo, *, now: datetime) -> None:
        """Add this process to the worker registry."""

    async def node_heartbeat(
        self, conn: AsyncConnection, node_id: str, *, slots_in_use: int, now: datetime
    ) -> None:
        """Refresh a node's heartbeat and slot use."""

    async def node_stop(self, conn: AsyncConnection, node_id: str, *, now: datetime) -> None:
        """Mark a node stopped."""

    async def nodes_purge_count(self, conn: AsyncConnection, *, before: datetime) -> int:
        """How many registry rows :meth:`nodes_purge_batch` would remove."""

    async def nodes_purge_batch(
        self, conn: AsyncConnection, *, before: datetime, limit: int = 1000
    ) -> int:
        """Remove registry rows whose last heartbeat is older than ``before``."""

    async def leader_acquire(
        self, conn: AsyncConnection, name: str, holder: str, *, now: datetime, ttl: timedelta
    ) -> bool:
        """Take or extend the lease ``name``; True when ``holder`` leads."""

    async def leader_release(self, conn: AsyncConnection, name: str, holder: str) -> None:
        """Give the lease up (only when ``holder`` holds it)."""

    async def close(self) -> None:
        """Release what the driver holds open (the fast path's connection)."""
