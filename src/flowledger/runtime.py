"""The runtime: everything a flowledger process is wired from, built once
from the settings and passed down — the database, the clock, the engine
hooks (failure policies and instance-ended), the engine, the handler
registry a worker runs, the outbound resources (HTTP client, secret box,
connector guards: :class:`~flowledger.outbound.resources.Outbound`, closed
by :meth:`Runtime.aclose`), the notification channels and the maintenance
services. :class:`~flowledger.engine.Engine`, :class:`~flowledger.worker.
worker.Worker`, the API (:func:`flowledger.api.app.create_app`) and the CLI
all take their pieces from one :class:`Runtime`; nothing is installed or
registered as a side effect of an import.

:func:`build_runtime` is the default builder (compensation on, flowledger's
own handlers, the process settings); tests and the demo use it with their
own database and clock::

    runtime = build_runtime(db=db, clock=clock)
    engine = runtime.engine           # with the failure policies (SPEC C-1)
    worker = runtime.worker(config)   # built-in handlers + maintenance

``build_runtime(compensation=False)`` builds an engine without failure
policies, and says so (``runtime.engine.hooks is NO_HOOKS``).

The runtime holds its own job-type registry (``runtime.job_types``): the
pools of the settings (``FLOWLEDGER_POOLS``) and of ``build_runtime(pools=…)``
(``flowledger worker --pool``) are declared on it before any handler module
is imported, and every handler's type (flowledger's own, SPEC L-2, and the
user's) is registered there as its handler is added. ``runtime.enqueue``
enqueues in a transaction of its own and resolves job types given by name
with that registry. See ``docs/embedding.md``.

The settings are read from the environment only when none are given
(:func:`~flowledger.settings.get_settings`, the process entry points' way);
below this module every reader takes them (or an object built from them)
as an argument; nothing caches them. A test overrides them with
``build_runtime(settings=Settings(...))``, or with the environment before it
builds its runtime.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.access.login_codes import LoginCodes
from flowledger.clock import Clock, SystemClock
from flowledger.compensation.policies import compensation_hooks
from flowledger.db.database import Database
from flowledger.db.replica import open_replica_database
from flowledger.engine import Engine
from flowledger.engine.hooks import NO_HOOKS, EngineHooks
from flowledger.engine.step import Step
from flowledger.engine.store import EngineStore
from flowledger.handlers import builtin_handlers
from flowledger.handlers.services import engine_services
from flowledger.ledger.driver.protocol import LedgerDriver
from flowledger.ledger.models import EnqueueResult, JobSpec
from flowledger.ledger.types import JobTypeRegistry
from flowledger.notify.sms import SmsGateway, gateway_from_settings
from flowledger.outbound.resources import Outbound
from flowledger.settings import Settings, get_settings
from flowledger.telemetry import configure_from_env
from flowledger.worker.leader import LeaderElector
from flowledger.worker.registry import HandlerRegistry
from flowledger.worker.services import PeriodicService
from flowledger.worker.worker import Worker, WorkerConfig, settings_pools


@dataclass(frozen=True)
class Channels:
    """The notification channels of the process: the SMTP settings e-mail is
    sent with (``settings.smtp_*``) and the SMS gateway (None when
    ``FLOWLEDGER_SMS_GATEWAY_URL`` is not set)."""

    settings: Settings
    sms: SmsGateway | None


@dataclass
class Runtime:
    settings: Settings
    db: Database
    clock: Clock
    hooks: EngineHooks[Step]
    engine: Engine
    handlers: HandlerRegistry
    channels: Channels
    outbound: Outbound
    worker_config: WorkerConfig = field(default_factory=WorkerConfig)
    # the clock workers run on: None lets each worker take the database's
    # (PostgreSQL) or the system's (SQLite) — the handlers read ctx.clock
    worker_clock: Clock | None = None
    # the job types and pools this runtime knows: its handlers' (issue 16 item 3)
    job_types: JobTypeRegistry = field(default_factory=JobTypeRegistry)
    # the web console's one-time login codes: the CLI mints, the API redeems
    login_codes: LoginCodes = field(default_factory=LoginCodes)
    # the streaming replica of FLOWLEDGER_READ_DATABASE_URL (None: none); the
    # runtime opened it, and closes it in aclose
    replica: Database | None = None

    @property
    def store(self) -> EngineStore:
        """The engine store: how the engine's steps write on this database
        (PostgreSQL's or SQLite's), chosen once when the engine was built."""
        return self.engine.store

    @property
    def ledger(self) -> LedgerDriver:
        """The ledger driver of this database, chosen once: the engine store
        holds it, and the runtime's workers run their steps with it."""
        return self.engine.store.ledger

    async def enqueue(self, *specs: JobSpec) -> list[EnqueueResult]:
        """Enqueue ``specs`` in one transaction of their own (at the engine's
        clock); a spec may name its type, which :attr:`job_types` resolves.
        To enqueue inside a transaction of yours: :meth:`enqueue_in`."""
        async with self.db.begin() as conn:
            return await self.enqueue_in(conn, *specs)

    async def enqueue_in(
        self, conn: AsyncConnection, *specs: JobSpec, now: datetime | None = None
    ) -> list[EnqueueResult]:
        """Enqueue ``specs`` in the caller's transaction on ``conn`` (one
        statement on PostgreSQL; at ``now``, else the engine's clock): each
        answer is the new job's id, or, for an idempotencyKey that already
        names a job, that job's with ``created=False`` (SPEC L-15). The jobs
        become visible, and their pools are woken, when the caller commits."""
        return await self.ledger.jobs_insert(
            conn, list(specs), now=now or self.clock.now(), job_types=self.job_types
        )

    def maintenance_services(self, elector: LeaderElector) -> list[PeriodicService]:
        """The engine's maintenance services, gated by ``elector``."""
        return engine_services(self.db, self.clock, elector=elector, settings=self.settings)

    async def aclose(self) -> None:
        """Close what the runtime opened on the running loop (the outbound
        client, the replica's pool); the database is the caller's to dispose."""
        await self.outbound.aclose()
        if self.replica is not None:
            await self.replica.dispose()

    def worker(
        self,
        config: WorkerConfig | None = None,
        *,
        roles: list[str] | None = None,
        maintenance: bool = True,
    ) -> Worker:
        """A worker running this runtime's handlers (with its engine) and,
        unless ``maintenance`` is False, its maintenance services."""

        def services(db: Database, clock: Clock, elector: LeaderElector) -> list[PeriodicService]:
            return self.maintenance_services(elector)

        return Worker(
            self.db,
            config or self.worker_config,
            clock=self.worker_clock,
            roles=roles,
            handlers=self.handlers,
            extra_services=services if maintenance else None,
            ledger=self.ledger,
        )


def open_database(settings: Settings) -> Database:
    """The database the settings name, with its pooler settings (issue 34)."""
    return Database(
        settings.database_url,
        pool_size=settings.db_pool_size,
        listen_url=settings.listen_database_url,
        prepared_statements=settings.db_prepared_statements,
    )


def open_replica(settings: Settings, primary: Database) -> Database | None:
    """The streaming replica of ``primary`` the console's read models read
    (issue 34 item 6), or None when ``FLOWLEDGER_READ_DATABASE_URL`` is
    empty. PostgreSQL only, the primary as the replica."""
    if not settings.read_database_url:
        return None
    return open_replica_database(
        settings.read_database_url,
        primary,
        pool_size=settings.db_pool_size,
        prepared_statements=settings.db_prepared_statements,
    )


def build_runtime(
    *,
    settings: Settings | None = None,
    db: Database | None = None,
    clock: Clock | None = None,
    engine: Engine | None = None,
    compensation: bool = True,
    handler_modules: list[str] | None = None,
    extra_handlers: HandlerRegistry | None = None,
    pools: Mapping[str, int] | None = None,
) -> Runtime:
    """The default runtime: ``settings`` (the process settings by default),
    their database unless ``db`` is given, ``clock`` for the engine and the
    workers (by default the system clock for the engine and the worker's own
    choice for workers: calibrated to the database on PostgreSQL), the
    compensation hooks unless ``compensation`` is False, and flowledger's own
    handlers plus those of ``handler_modules`` and ``extra_handlers``. An
    ``engine`` given is used as is (its clock and hooks win). ``pools``
    (``--pool``) replaces the pools the workers run (``FLOWLEDGER_POOLS`` and
    the built-in slots); every pool of either is declared on the job-type
    registry before ``handler_modules`` are imported."""
    settings = settings or get_settings()
    configure_from_env()  # OpenTelemetry, when the OTEL_* variables ask (issue 33)
    job_types = JobTypeRegistry()
    worker_config = WorkerConfig.from_settings(settings)
    job_types.declare_pools(settings_pools(settings))
    if pools is not None:
        worker_config = replace(worker_config, pools=dict(pools))
        job_types.declare_pools(pools)
    db = db or open_database(settings)
    worker_clock = clock
    if engine is not None:
        clock, hooks = engine.clock, engine.hooks
    else:
        clock = clock or SystemClock()
        hooks = compensation_hooks(settings.admin_users) if compensation else NO_HOOKS
        engine = Engine(db, clock, hooks=hooks, settings=settings)
    outbound = Outbound(settings)
    handlers = builtin_handlers(engine, settings, outbound, job_types=job_types)
    if handler_modules:
        handlers.import_modules(handler_modules)
    if extra_handlers is not None:
        handlers.include(extra_handlers)
    return Runtime(
        settings=settings,
        db=db,
        clock=clock,
        hooks=hooks,
        engine=engine,
        handlers=handlers,
        channels=Channels(
            settings=settings,
            sms=gateway_from_settings(settings, outbound) if settings.sms_gateway_url else None,
        ),
        outbound=outbound,
        worker_config=worker_config,
        worker_clock=worker_clock,
        job_types=job_types,
        replica=open_replica(settings, db),
    )
