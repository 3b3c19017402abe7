"""Ids a step reserves in a statement it sends anyway (issue 15 item 2;
SPEC E-4, E-5): the step then knows the ids of the tasks, the fork frame,
the branch tokens and the jobs it creates without inserting them, and their
inserts ride on the step's last statement with its other rows
(:mod:`~flowledger.engine.write_buffer`) instead of a round trip each — a
job's trace row names its job by that id (issue 28: not by its position in
the insert).

PostgreSQL only (``nextval`` of each table's id sequence); elsewhere nothing
is reserved and rows are inserted when they are made, as before. Ids are
taken only after the instance row is locked (a new instance's start needs
no lock: nobody else sees it yet), so an instance's tasks and tokens keep
ids ascending in the order they were created: a step's reserved ids are
drawn after every earlier step on that instance committed, and a row it
makes past them draws a later id still. A reserved id a step does not use
is a gap, as a rolled-back insert leaves one."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Select, func, literal_column, select

from flowledger.engine.store.generic_plans import STEP_GENERIC_PLANS
from flowledger.ledger.driver.postgres_sql import JOBS_ID_SEQUENCE

# per kind: the id sequence and how many a reserving statement draws (a
# start's first task, a fork's frame and its two branches and their waits,
# and the jobs that wake those waits)
_KINDS = {
    "task": ("workflow_tasks_id_seq", 2),
    "fork": ("workflow_forks_id_seq", 1),
    "token": ("workflow_tokens_id_seq", 2),
    "job": (JOBS_ID_SEQUENCE, 2),
}


@dataclass
class Reserved:
    """The ids a step reserved, ascending per kind; taken as rows are made."""

    tasks: list[int] = field(default_factory=list)
    forks: list[int] = field(default_factory=list)
    tokens: list[int] = field(default_factory=list)
    jobs: list[int] = field(default_factory=list)


def reserve_columns() -> list[Any]:
    """Columns that draw the reserved ids (put them where the statement's
    rows are already locked)."""
    columns: list[Any] = []
    for kind, (sequence, count) in _KINDS.items():
        seq: Any = literal_column(f"'{sequence}'")
        columns += [func.nextval(seq).label(f"reserved_{kind}_{i}") for i in range(count)]
    return columns


def take_reserved(row: dict[str, Any]) -> Reserved:
    """The ids reserved in ``row`` (removed from it); empty when none were."""
    found: dict[str, list[int]] = {}
    for kind, (_sequence, count) in _KINDS.items():
        ids = [row.pop(f"reserved_{kind}_{i}", None) for i in range(count)]
        found[kind] = sorted(int(i) for i in ids if i is not None)
    return Reserved(
        tasks=found["task"], forks=found["fork"], tokens=found["token"], jobs=found["job"]
    )


def reserving(lock: Select[Any]) -> Select[Any]:
    """``lock`` (a ``SELECT … FOR UPDATE``) that also reserves ids: drawn in
    an outer query over the materialized lock, so after the lock is held
    (in the lock's own projection they would be drawn before any wait for
    it). As the step's first statement it also sets the step's generic plans
    (:mod:`~flowledger.engine.store.generic_plans`)."""
    locked = lock.cte("reserving_lock").prefix_with("MATERIALIZED")
    return select(locked, *reserve_columns()).where(STEP_GENERIC_PLANS)
