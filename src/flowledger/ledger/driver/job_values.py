"""The values of the ledger's job rows, without I/O: a spec's insert row
(SPEC L-1, L-12, L-15: the type, its defaults and limits checked), the
columns every row of one bulk insert shares, a claimed row as a
:class:`~flowledger.ledger.models.ClaimedJob`, and an outcome's settlement
(L-3 … L-5, L-17).

Outcome → parent status: success/skipped → succeeded; retry → pending with
backoff while attempts remain, else dead (``attempts_exhausted``); dead →
dead; unconfirmed → dead with ``external_outcome_unconfirmed``; released
(orderly shutdown) → pending now, the attempt not counted.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from flowledger.errors import FlowledgerError, UnknownJobTypeError
from flowledger.ledger.backoff import backoff_ms
from flowledger.ledger.fingerprint import fingerprint
from flowledger.ledger.models import ClaimedJob, JobSpec, Outcome, OutcomeKind, new_key
from flowledger.ledger.types import JobType, JobTypeRegistry
from flowledger.states import EXTERNAL_OUTCOME_UNCONFIRMED, AttemptStatus, JobStatus

DEFAULT_LEASE_MS = 60_000


def _utc(value: datetime) -> datetime:
    return value.astimezone(UTC)


def to_claimed(row: dict[str, Any]) -> ClaimedJob:
    """A claimed row (of any implementation) as the executor sees it."""
    return ClaimedJob(
        id=int(row["id"]),
        type=row["type"],
        pool=row["pool"],
        payload=row["payload"] or {},
        generation=row["generation"],
        attempt=row["attempts"],
        max_attempts=row["max_attempts"],
        lease_token=row["lease_token"],
        lease_until=_utc(row["lease_until"]),
        execution_deadline=_utc(row["execution_deadline"]),
        execution_id=int(row["execution_id"]),
        scheduled_at=_utc(row["run_at"]),
        started_at=_utc(row["started_at"]),
        operation_key=row["operation_key"],
        trace_id=row["trace_id"],
        tenant_id=row["tenant_id"],
        instance_id=row["instance_id"],
        task_id=row["task_id"],
        node_key=row["node_key"],
    )


def batch_values(now: datetime) -> dict[str, Any]:
    """The columns of :func:`job_row` that are the same for every spec
    enqueued at ``now`` (a bulk insert may send them once)."""
    return {
        "status": JobStatus.PENDING.value,
        "attempts": 0,
        "generation": 1,
        "created_at": now,
        "updated_at": now,
    }


BATCH_COLUMNS = tuple(batch_values(datetime.now(UTC)))


def spec_type(spec: JobSpec, job_types: JobTypeRegistry | None) -> JobType:
    """The job type of ``spec``: its own :class:`JobType`, or the type of that
    name in ``job_types`` (a name without a registry is refused)."""
    if isinstance(spec.type, JobType):
        return spec.type
    if job_types is None:
        raise UnknownJobTypeError(
            f"job type {spec.type!r} is given by name: enqueue a JobType, or pass the "
            "registry that knows the name (runtime.enqueue does)",
            field="type",
        )
    return job_types.get(spec.type)


def job_row(
    spec: JobSpec, now: datetime, job_types: JobTypeRegistry | None = None
) -> dict[str, Any]:
    """The ``workflow_jobs`` row of ``spec``: its type's pool and budget filled in."""
    job_type = spec_type(spec, job_types)
    if spec.delay_ms < 0:
        raise FlowledgerError("delay must not be negative", field="delayMs")
    run_at = spec.run_at or now + timedelta(milliseconds=spec.delay_ms)
    max_attempts = job_type.max_attempts if spec.max_attempts is None else spec.max_attempts
    if max_attempts < 1:
        raise FlowledgerError("maxAttempts must be at least 1", field="maxAttempts")
    timeout_ms = (
        job_type.execution_timeout_ms
        if spec.execution_timeout_ms is None
        else spec.execution_timeout_ms
    )
    if timeout_ms < 1:
        raise FlowledgerError("executionTimeoutMs must be positive", field="executionTimeoutMs")
    return {
        "type": job_type.name,
        "pool": job_type.pool,
        "payload": spec.payload,
        "tenant_id": spec.tenant_id,
        "instance_id": spec.instance_id,
        "task_id": spec.task_id,
        "node_key": spec.node_key,
        "priority": job_type.priority if spec.priority is None else spec.priority,
        "run_at": run_at,
        "max_attempts": max_attempts,
        "execution_timeout_ms": timeout_ms,
        "operation_key": spec.operation_key or new_key(),
        "trace_id": spec.trace_id or new_key(),
        "idempotency_key": spec.idempotency_key,
        **batch_values(now),
    }


def duration_ms(started_at: datetime, now: datetime) -> int:
    return max(0, int((now - started_at).total_seconds() * 1000))


def plan_outcome(
    attempts: int, max_attempts: int, outcome: Outcome, now: datetime
) -> tuple[dict[str, Any], AttemptStatus]:
    """The job columns and the attempt status an outcome leads to."""
    kind = outcome.kind
    if kind in (OutcomeKind.SUCCESS, OutcomeKind.SKIPPED):
        values = {
            "status": JobStatus.SUCCEEDED,
            "result": outcome.result,
            "last_error": None,
            "last_error_code": None,
            "last_error_fingerprint": None,
        }
        status = AttemptStatus.SUCCEEDED if kind is OutcomeKind.SUCCESS else AttemptStatus.SKIPPED
        return values, status
    if kind is OutcomeKind.RELEASED:  # handed back: the attempt does not count
        released: dict[str, Any] = {
            "status": JobStatus.PENDING,
            "run_at": now + timedelta(milliseconds=outcome.retry_delay_ms or 0),
            "attempts": max(attempts - 1, 0),
        }
        if outcome.error_code != "released":  # deferred: say why it waits
            released.update(
                last_error=outcome.error,
                last_error_code=outcome.error_code,
                last_error_fingerprint=fingerprint(outcome.error),
            )
        return released, AttemptStatus.CANCELED
    values = {
        "last_error": outcome.error,
        "last_error_code": outcome.error_code,
        "last_error_fingerprint": fingerprint(outcome.error),
    }
    if kind is OutcomeKind.UNCONFIRMED:
        values.update(status=JobStatus.DEAD, last_error_code=EXTERNAL_OUTCOME_UNCONFIRMED)
    elif kind is OutcomeKind.DEAD:
        values["status"] = JobStatus.DEAD
    elif attempts >= max_attempts:
        values.update(status=JobStatus.DEAD, last_error_code="attempts_exhausted")
    else:
        delay = (
            outcome.retry_delay_ms if outcome.retry_delay_ms is not None else backoff_ms(attempts)
        )
        values.update(status=JobStatus.PENDING, run_at=now + timedelta(milliseconds=delay))
    return values, AttemptStatus.FAILED


def is_plain_success(outcome: Outcome) -> bool:
    return (
        outcome.kind in (OutcomeKind.SUCCESS, OutcomeKind.SKIPPED)
        and outcome.request is None
        and outcome.response is None
    )
