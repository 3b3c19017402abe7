"""Handler of automation_action jobs (SPEC X-6): runs the one action the job
carries (:mod:`flowledger.events.automation_actions`) with the worker's
engine snapshot cache and the process settings (SMTP, SMS gateway)."""

from __future__ import annotations

from typing import Any

from flowledger.events.automation import JOB_TYPE
from flowledger.events.automation_actions import run_automation_action
from flowledger.handlers.engine_jobs import engine_for
from flowledger.settings import get_settings
from flowledger.states import Pool
from flowledger.worker import JobContext, register_handler


async def automation_action(ctx: JobContext) -> Any:
    return await run_automation_action(
        ctx, snapshots=engine_for(ctx).snapshots, settings=get_settings()
    )


register_handler(JOB_TYPE, automation_action, pool=Pool.OUTBOUND)
