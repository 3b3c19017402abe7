"""The engine's Python API (SPEC E-11): one method per user-visible action,
each one transaction that locks the instance row first. The REST API, the CLI
and the job handlers all go through this class.

An action given an ``audit`` entry (SPEC A-2; issue 29 item 2) writes its
``ok`` audit row in the action's own transaction, with what the action
learned (the new instance's id, the paused jobs …), or its ``failed`` row
when it raises (:func:`flowledger.access.audit.change_transaction`): the change
and its record commit together."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from datetime import datetime
from typing import Any, TypeVar

from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.access.audit import AuditEntry, change_transaction
from flowledger.clock import Clock, SystemClock
from flowledger.db.database import Database
from flowledger.definitions.parse import DocumentLimits
from flowledger.engine import actions, deployments, lifecycle, schedules
from flowledger.engine import force_jump as jumps
from flowledger.engine.forms import validate_form
from flowledger.engine.hooks import NO_HOOKS, EngineHooks
from flowledger.engine.instances import start_instance
from flowledger.engine.snapshots import SnapshotCache
from flowledger.engine.step import Step, lock_task_instance, open_step
from flowledger.engine.store import engine_store
from flowledger.settings import Settings
from flowledger.states import InstanceStatus

T = TypeVar("T")
DEFAULT_TENANT = "default"


class _Preview(Exception):
    """Raised inside a step to roll its transaction back (a preview)."""


class Engine:
    """The engine over ``db``. ``hooks`` are what every step of this engine
    runs with: the default, :data:`~flowledger.engine.hooks.NO_HOOKS`, is an
    engine without failure policies (a failed node follows the built-in
    behaviour); :func:`flowledger.runtime.build_runtime` gives it the
    compensation hooks (SPEC C-1)."""

    def __init__(
        self,
        db: Database,
        clock: Clock | None = None,
        *,
        hooks: EngineHooks[Step] = NO_HOOKS,
        settings: Settings | None = None,
    ) -> None:
        self.db = db
        self.clock = clock or SystemClock()
        self.snapshots = SnapshotCache()
        self.hooks = hooks
        # how its steps' writes are sent on this database, chosen once
        self.store = engine_store(db)
        # the runtime's settings (document limits, schedule period); an engine
        # built without any reads them from the environment, once, here
        self.settings = settings if settings is not None else Settings()

    async def open_step(
        self,
        conn: AsyncConnection,
        instance_id: int,
        *,
        actor: str,
        now: datetime | None = None,
        job_id: int | None = None,
        locked: dict[str, Any] | None = None,
    ) -> Step:
        """Lock ``instance_id`` and open a step on it with this engine's
        snapshots and hooks, at ``now`` (a job's handler passes its worker's
        clock reading; default this engine's) — ``job_id``: the ledger job
        running it; ``locked``: the instance row when the transaction already
        locked it first (:class:`~flowledger.engine.step.JobStepLock`)."""
        return await open_step(
            conn,
            instance_id,
            now=self.clock.now() if now is None else now,
            actor=actor,
            snapshots=self.snapshots,
            hooks=self.hooks,
            store=self.store,
            job_id=job_id,
            locked=locked,
        )

    @asynccontextmanager
    async def step(
        self, conn: AsyncConnection, instance_id: int, actor: str
    ) -> AsyncIterator[Step]:
        yield await self.open_step(conn, instance_id, actor=actor)

    @asynccontextmanager
    async def _transaction(self, audit: AuditEntry | None) -> AsyncIterator[AsyncConnection]:
        """An action's one transaction; with ``audit``, its audit row too."""
        async with change_transaction(self.db, audit, self.clock.now) as conn:
            yield conn

    async def _in_step(
        self,
        instance_id: int,
        actor: str,
        fn: Callable[[Step], Awaitable[T]],
        audit: AuditEntry | None = None,
        learned: Callable[[T], dict[str, Any]] | None = None,
    ) -> T:
        """``fn`` in a step on ``instance_id``; ``learned``: what of its
        result the audit row records."""
        async with self._transaction(audit) as conn, self.step(conn, instance_id, actor) as step:
            result = await fn(step)
            if audit is not None and learned is not None:
                audit.detail.update(learned(result))
            return result

    # ------------------------------------------------------------ definitions

    async def deploy(
        self,
        source: str | bytes | dict[str, Any],
        *,
        actor: str,
        tenant: str = DEFAULT_TENANT,
        audit: AuditEntry | None = None,
    ) -> dict[str, Any]:
        async with self._transaction(audit) as conn:
            row = await deployments.deploy(
                conn,
                source,
                tenant=tenant,
                actor=actor,
                now=self.clock.now(),
                limits=DocumentLimits.of(self.settings),
            )
            if audit is not None:
                audit.target_id = str(row["id"])
                audit.detail.update(key=row["key"], version=row["version"])
            return row

    # -------------------------------------------------------------- instances

    async def start(
        self,
        key: str,
        *,
        form: dict[str, Any],
        initiator: str,
        tenant: str = DEFAULT_TENANT,
        version: int | None = None,
        audit: AuditEntry | None = None,
    ) -> int:
        async with self._transaction(audit) as conn:
            instance_id = await start_instance(
                conn,
                key,
                form=form,
                initiator=initiator,
                tenant=tenant,
                now=self.clock.now(),
                snapshots=self.snapshots,
                hooks=self.hooks,
                store=self.store,
                version=version,
            )
            if audit is not None:
                audit.target_id = str(instance_id)
            return instance_id

    async def withdraw(
        self,
        instance_id: int,
        *,
        actor: str,
        reason: str | None = None,
        audit: AuditEntry | None = None,
    ) -> None:
        await self._in_step(
            instance_id,
            actor,
            lambda s: lifecycle.terminate(s, InstanceStatus.WITHDRAWN, reason),
            audit,
        )

    async def cancel(
        self,
        instance_id: int,
        *,
        actor: str,
        reason: str | None = None,
        audit: AuditEntry | None = None,
    ) -> None:
        await self._in_step(
            instance_id,
            actor,
            lambda s: lifecycle.terminate(s, InstanceStatus.CANCELED, reason),
            audit,
        )

    async def return_to_initiator(
        self,
        instance_id: int,
        *,
        actor: str,
        reason: str | None = None,
        audit: AuditEntry | None = None,
    ) -> int:
        return await self._in_step(
            instance_id,
            actor,
            lambda s: lifecycle.return_to_initiator(s, reason),
            audit,
            lambda task_id: {"taskId": task_id},
        )

    async def suspend(
        self,
        instance_id: int,
        *,
        actor: str,
        reason: str | None = None,
        audit: AuditEntry | None = None,
    ) -> list[int]:
        return await self._in_step(
            instance_id,
            actor,
            lambda s: lifecycle.suspend(s, reason),
            audit,
            lambda paused: {"pausedJobs": paused},
        )

    async def resume(
        self,
        instance_id: int,
        *,
        actor: str,
        reason: str | None = None,
        audit: AuditEntry | None = None,
    ) -> list[int]:
        return await self._in_step(
            instance_id,
            actor,
            lambda s: lifecycle.resume(s, reason),
            audit,
            lambda resumed: {"resumedJobs": resumed},
        )

    async def comment(
        self,
        instance_id: int,
        body: str,
        *,
        actor: str,
        task_id: int | None = None,
        audit: AuditEntry | None = None,
    ) -> int:
        return await self._in_step(
            instance_id,
            actor,
            lambda s: actions.add_comment(s, body, task_id=task_id),
            audit,
            lambda comment_id: {"commentId": comment_id},
        )

    async def force_jump(
        self,
        instance_id: int,
        *,
        target: str,
        reason: str,
        actor: str,
        from_node: str | None = None,
        preview: bool = False,
    ) -> jumps.JumpOutcome:
        """SPEC O-4: move the execution to ``target`` in one step under the
        instance lock. ``preview`` runs exactly the same step and rolls it
        back, so the preview is what the jump would do."""
        return await self._maybe_rolled_back(
            instance_id,
            actor,
            lambda s: jumps.force_jump(s, target=target, reason=reason, from_node=from_node),
            preview,
        )

    async def recover_node(
        self,
        instance_id: int,
        *,
        node_key: str,
        reason: str,
        actor: str,
        dry_run: bool = False,
    ) -> jumps.RecoveryOutcome | str:
        """SPEC O-6 for one instance, in its own transaction (rolled back
        when ``dry_run``): skip the task at ``node_key`` and advance."""
        return await self._maybe_rolled_back(
            instance_id,
            actor,
            lambda s: jumps.skip_and_advance(s, node_key=node_key, reason=reason),
            dry_run,
        )

    async def _maybe_rolled_back(
        self,
        instance_id: int,
        actor: str,
        fn: Callable[[Step], Awaitable[T]],
        rollback: bool,
    ) -> T:
        if not rollback:
            return await self._in_step(instance_id, actor, fn)
        box: list[T] = []
        try:
            async with self.db.begin() as conn, self.step(conn, instance_id, actor) as step:
                box.append(await fn(step))
                raise _Preview
        except _Preview:
            pass
        return box[0]

    # ------------------------------------------------------------------ tasks

    async def _in_task_step(
        self,
        task_id: int,
        actor: str,
        fn: Callable[[Step], Awaitable[T]],
        audit: AuditEntry | None = None,
    ) -> T:
        """Run ``fn`` in a step on the instance of task ``task_id``, found and
        locked in one statement (no separate read transaction first)."""
        async with self._transaction(audit) as conn:
            locked = await lock_task_instance(conn, task_id, self.store)
            step = await self.open_step(conn, int(locked["id"]), actor=actor, locked=locked)
            return await fn(step)

    async def act(
        self,
        task_id: int,
        action: str,
        *,
        actor: str,
        comment: str | None = None,
        form: dict[str, Any] | None = None,
        as_operator: bool = True,
        audit: AuditEntry | None = None,
    ) -> None:
        """approve / reject / handle a task. With ``as_operator=False`` only the
        task's assignee may act (checked under the instance lock)."""
        await self._in_task_step(
            task_id,
            actor,
            lambda s: actions.complete(
                s, task_id, action, comment=comment, form=form, assignee_only=not as_operator
            ),
            audit,
        )

    async def approve(
        self,
        task_id: int,
        *,
        actor: str,
        comment: str | None = None,
        form: dict[str, Any] | None = None,
        as_operator: bool = True,
        audit: AuditEntry | None = None,
    ) -> None:
        await self.act(
            task_id,
            "approve",
            actor=actor,
            comment=comment,
            form=form,
            as_operator=as_operator,
            audit=audit,
        )

    async def reject(
        self,
        task_id: int,
        *,
        actor: str,
        comment: str | None = None,
        as_operator: bool = True,
        audit: AuditEntry | None = None,
    ) -> None:
        await self.act(
            task_id, "reject", actor=actor, comment=comment, as_operator=as_operator, audit=audit
        )

    async def handle(
        self,
        task_id: int,
        *,
        actor: str,
        comment: str | None = None,
        form: dict[str, Any] | None = None,
        as_operator: bool = True,
        audit: AuditEntry | None = None,
    ) -> None:
        await self.act(
            task_id,
            "handle",
            actor=actor,
            comment=comment,
            form=form,
            as_operator=as_operator,
            audit=audit,
        )

    async def transfer(
        self,
        task_id: int,
        to_user: str,
        *,
        actor: str,
        comment: str | None = None,
        as_operator: bool = True,
        audit: AuditEntry | None = None,
    ) -> None:
        await self._in_task_step(
            task_id,
            actor,
            lambda s: actions.transfer(
                s, task_id, to_user, comment=comment, assignee_only=not as_operator
            ),
            audit,
        )

    # -------------------------------------------------------------- schedules

    async def create_schedule(
        self,
        *,
        definition_key: str,
        cron: str,
        form: dict[str, Any],
        initiator: str,
        name: str | None = None,
        timezone: str = "UTC",
        tenant: str = DEFAULT_TENANT,
        audit: AuditEntry | None = None,
    ) -> int:
        async with self._transaction(audit) as conn:
            definition = await deployments.get_version(conn, definition_key, tenant=tenant)
            validate_form(self.snapshots.get(definition["id"], definition["source"]).form, form)
            schedule_id = await schedules.create_schedule(
                conn,
                tenant=tenant,
                name=name or definition_key,
                definition_key=definition_key,
                cron=cron,
                timezone=timezone,
                form=form,
                initiator=initiator,
                now=self.clock.now(),
                min_period_s=self.settings.schedule_min_period_s,
            )
            if audit is not None:
                audit.target_id = str(schedule_id)
            return schedule_id

    async def set_schedule_enabled(
        self,
        schedule_id: int,
        enabled: bool,
        *,
        tenants: list[str] | None = None,
        audit: AuditEntry | None = None,
    ) -> dict[str, Any]:
        """Turn a schedule on or off (:func:`schedules.set_enabled`); the row after."""
        async with self._transaction(audit) as conn:
            before, after = await schedules.set_enabled(
                conn, schedule_id, enabled, now=self.clock.now(), tenants=tenants
            )
            if audit is not None:
                audit.tenant_id = after["tenant_id"]
                audit.detail.update(enabled=enabled, changed=before["enabled"] != enabled)
            return after

    async def launch_schedule(
        self,
        schedule_id: int,
        *,
        tenants: list[str] | None = None,
        audit: AuditEntry | None = None,
    ) -> int:
        async with self._transaction(audit) as conn:
            schedule = await schedules.get_schedule(conn, schedule_id, tenants=tenants)
            job_id = await schedules.launch_manually(
                conn, schedule, now=self.clock.now(), ledger=self.store.ledger
            )
            if audit is not None:
                audit.detail["jobId"] = job_id
            return job_id

    async def plan_schedules(self) -> list[int]:
        async with self.db.begin() as conn:
            return await schedules.plan_due(conn, now=self.clock.now(), ledger=self.store.ledger)
