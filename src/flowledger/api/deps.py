"""The request-scoped dependencies shared by every router (STYLE:
``Annotated`` dependencies): the API context (database, engine, clock) and
the caller (see :mod:`flowledger.api.auth`)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Annotated

from fastapi import Depends, Request

from flowledger.db.database import Database
from flowledger.engine import Engine


@dataclass(frozen=True)
class ApiContext:
    db: Database
    engine: Engine

    def now(self) -> datetime:
        return self.engine.clock.now()


def get_context(request: Request) -> ApiContext:
    ctx: ApiContext = request.app.state.api
    return ctx


Ctx = Annotated[ApiContext, Depends(get_context)]
