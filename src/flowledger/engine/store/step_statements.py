"""The engine store's two composed PostgreSQL statements (issue 28 item 3):
a step's rows (token moves, forks, tasks, outbox, form writes, trace:
:func:`~flowledger.engine.store.writes.pg_step_rows_ctes`) written in the
same statement as one of the ledger's writes, built from the ledger's
exported parts (:mod:`flowledger.ledger.driver.postgres_parts`):

- **rows then settlement** — ``WITH <step rows>, settled, attempt, receipt
  SELECT id FROM settled``: a job step's rows with its receipt and its
  plain success (the job's handler hands its settlement to the store:
  ``engine.step.JobStepSettlement``). The rows are written even when the
  fence no longer holds; the caller then rolls the transaction back.
- **jobs then rows** — ``WITH input, inserted, woken, <step rows> SELECT
  input.ord, inserted.id …``: a step's jobs (ids the step reserved) and its
  rows, whose trace rows name those jobs by those ids (the write buffer's
  flush before a commit).

Data-modifying CTEs run to completion whether or not the answer reads them,
in the statement's one snapshot, and commit with it. One text per shape of
the step's rows (cached), so psycopg prepares each once. The step's
parameter names (all prefixed ``step_``) and the ledger's part's must
differ: checked once per text, when it is built."""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime
from functools import cache
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.engine.store.writes import StepRowsCtes
from flowledger.ledger.driver.postgres_parts import (
    INSERT_NAMES,
    SETTLEMENT_CTES,
    SETTLEMENT_NAMES,
    SETTLEMENT_SELECT,
    jobs_insert_parts,
    jobs_inserted,
    settlement_params,
)
from flowledger.ledger.models import EnqueueResult, Fence, JobSpec, Outcome

_PARAM = re.compile(r"%\((\w+)\)s")


def _apart(step_ctes: str, ledger_names: frozenset[str]) -> None:
    """ValueError when a parameter of ``step_ctes`` is also the ledger's."""
    clash = sorted(set(_PARAM.findall(step_ctes)) & ledger_names)
    if clash:
        raise ValueError(f"the step's parameters {clash} are also the ledger's")


@cache  # one text per shape of the step's rows
def rows_then_settlement_sql(step_ctes: str) -> str:
    """The step's rows, then the ledger's settlement of its job."""
    _apart(step_ctes, SETTLEMENT_NAMES)
    return f"WITH {step_ctes}, {SETTLEMENT_CTES}\n{SETTLEMENT_SELECT}\n"


@cache  # one text per column set of the jobs and shape of the step's rows
def jobs_then_rows_sql(insert_ctes: str, insert_select: str, step_ctes: str) -> str:
    """The ledger's insert of the step's jobs, then the step's rows."""
    _apart(step_ctes, INSERT_NAMES)
    return f"WITH {insert_ctes}, {step_ctes}\n{insert_select}\n"


async def write_rows_then_settlement(
    conn: AsyncConnection,
    rows: StepRowsCtes,
    fence: Fence,
    operation_key: str,
    step_key: str,
    receipt: Any,
    outcome: Outcome,
    *,
    now: datetime,
    started_at: datetime | None,
) -> bool:
    """Send :func:`rows_then_settlement_sql`; whether the fenced settlement took."""
    params = settlement_params(
        fence, operation_key, step_key, receipt, outcome, now=now, started_at=started_at
    )
    answer = await conn.exec_driver_sql(
        rows_then_settlement_sql(rows.ctes), {**rows.params, **params}
    )
    return answer.first() is not None


async def write_jobs_then_rows(
    conn: AsyncConnection,
    specs: Sequence[JobSpec],
    ids: Sequence[int],
    rows: StepRowsCtes,
    *,
    now: datetime,
) -> list[EnqueueResult]:
    """Send :func:`jobs_then_rows_sql`: ``specs`` inserted as jobs ``ids``."""
    insert = jobs_insert_parts(specs, ids, now=now, dialect=conn.dialect)
    sql = jobs_then_rows_sql(insert.ctes, insert.select, rows.ctes)
    answer = await conn.exec_driver_sql(sql, {**insert.params, **rows.params})
    return jobs_inserted(conn, insert, answer)
