"""The request-scoped dependencies shared by every router (STYLE:
``Annotated`` dependencies): the API context (database and its read replica,
engine, clock, the runtime's settings, outbound resources, console login
codes and job types) and the caller (see :mod:`flowledger.api.auth`).

:func:`~flowledger.api.app.create_app` builds the context from its runtime.
A context built by hand without ``runtime_settings`` reads the process
settings (:func:`~flowledger.settings.get_settings`) at each use, and
without ``outbound`` builds its secret box from those settings — what a test
that changes the environment between requests needs."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Annotated

from fastapi import Depends, Request

from flowledger.access.login_codes import LoginCodes
from flowledger.db.database import Database
from flowledger.engine import Engine
from flowledger.ledger.types import JobTypeRegistry
from flowledger.outbound.resources import Outbound
from flowledger.outbound.secrets import SecretBox, box_from_settings
from flowledger.settings import Settings, get_settings


@dataclass(frozen=True)
class ApiContext:
    db: Database
    engine: Engine
    runtime_settings: Settings | None = None
    outbound: Outbound | None = None
    login_codes: LoginCodes = field(default_factory=LoginCodes)
    # the runtime's job types (engine diagnostics lists them); none by hand
    job_types: JobTypeRegistry = field(default_factory=JobTypeRegistry)
    # the streaming replica of FLOWLEDGER_READ_DATABASE_URL (issue 34 item 6)
    replica: Database | None = None

    @property
    def settings(self) -> Settings:
        return self.runtime_settings or get_settings()

    @property
    def secrets(self) -> SecretBox:
        """The box stored secrets are encrypted with (SPEC X-3, X-5)."""
        if self.outbound is not None:
            return self.outbound.secrets
        return box_from_settings(self.settings)

    @property
    def read_db(self) -> Database:
        """Where the console's heavy read models read (issue 34 item 6): the
        lists, counts and exports of instances and jobs, the failure
        clusters, analytics and the health inspection, score and history.
        The replica when one is configured, else the primary. Everything
        that decides or writes — an action's lookups, the detail an action
        answers with, tasks, the runtime status — reads ``db``, the primary."""
        return self.replica or self.db

    def now(self) -> datetime:
        return self.engine.clock.now()


def get_context(request: Request) -> ApiContext:
    ctx: ApiContext = request.app.state.api
    return ctx


Ctx = Annotated[ApiContext, Depends(get_context)]
