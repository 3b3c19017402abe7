"""Handler of automation_action jobs (SPEC X-6): runs the one action the job
carries (:mod:`flowledger.events.automation_actions`) with the runtime's
engine and settings (SMTP, SMS gateway)."""

from __future__ import annotations

from typing import Any

from flowledger.engine.facade import Engine
from flowledger.events.automation import AUTOMATION_ACTION_TYPE
from flowledger.events.automation_actions import run_automation_action
from flowledger.outbound.resources import Outbound
from flowledger.settings import Settings
from flowledger.worker import JobContext
from flowledger.worker.registry import Handler, define_handler


def handlers(engine: Engine, settings: Settings, outbound: Outbound) -> list[Handler]:
    """``automation_action``, bound to ``engine``, ``settings`` and ``outbound``."""

    async def automation_action(ctx: JobContext) -> Any:
        return await run_automation_action(ctx, engine=engine, settings=settings, outbound=outbound)

    return [define_handler(AUTOMATION_ACTION_TYPE, automation_action)]
