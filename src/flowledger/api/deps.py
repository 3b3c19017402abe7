"""The request-scoped dependencies shared by every router (STYLE:
``Annotated`` dependencies): the API context (database, engine, clock, the
runtime's settings, outbound resources, console login codes and job types) and the caller (see
:mod:`flowledger.api.auth`).

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

    @property
    def settings(self) -> Settings:
        return self.runtime_settings or get_settings()

    @property
    def secrets(self) -> SecretBox:
        """The box stored secrets are encrypted with (SPEC X-3, X-5)."""
        if self.outbound is not None:
            return self.outbound.secrets
        return box_from_settings(self.settings)

    def now(self) -> datetime:
        return self.engine.clock.now()


def get_context(request: Request) -> ApiContext:
    ctx: ApiContext = request.app.state.api
    return ctx


Ctx = Annotated[ApiContext, Depends(get_context)]
