"""Job types and pools: a job type is a name bound to a pool and a budget
(SPEC L-2, L-5, L-11); a pool is a named queue that workers run with their
own number of slots.

The two built-in pools of SPEC L-2 (:data:`BUILTIN_POOLS`) always exist;
user pools (``emails``, ``reports``, …) are declared by name — in the
settings (``FLOWLEDGER_POOLS="emails=2,reports=1"``) or on ``flowledger
worker --pool NAME=SLOTS`` — before job types name them. :func:`parse_pools`
reads both spellings and says which field is wrong.

A :class:`JobType` is a plain immutable value: the package that owns a job
type declares it as a constant (the engine's in ``engine/job_types.py``,
the event relay's in ``events/``, …) and enqueues with it — the ledger
knows no job type by name. The ledger reads the pool and budget of the
spec's type at enqueue time and stores them on the row, so a worker never
needs the enqueuer's types, and a job whose pool no worker runs simply
waits.

A :class:`JobTypeRegistry` holds the job types one worker or runtime knows
(its handlers' types) and the pools they may name; a type naming an
undeclared pool is refused at registration. It is a plain object — the
:class:`~flowledger.runtime.Runtime` builds one (``runtime.job_types``);
there is no process-wide registry. A spec may name its type by a string
only when its enqueuer passes a registry to resolve it with
(``runtime.enqueue`` does).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

from flowledger.errors import ConfigurationError, UnknownJobTypeError
from flowledger.states import Pool

DEFAULT_MAX_ATTEMPTS = 5
DEFAULT_EXECUTION_TIMEOUT_MS = 10 * 60 * 1000  # SPEC L-11
DEFAULT_PRIORITY = 100

BUILTIN_POOLS: tuple[str, ...] = (Pool.LEDGER.value, Pool.OUTBOUND.value)
POOL_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,62}$")
MAX_POOL_SLOTS = 256


def validate_pool_name(name: str, *, field: str = "pool") -> str:
    """``name`` if it is a valid pool name (a lower-case letter, then up to 62
    lower-case letters, digits, ``-`` or ``_``), else a ConfigurationError."""
    if not isinstance(name, str) or not POOL_NAME.match(name):
        raise ConfigurationError(
            f"invalid pool name {name!r}: use a lower-case letter followed by up to 62 "
            "lower-case letters, digits, '-' or '_'",
            field=field,
        )
    return name


def parse_pools(
    entries: str | Iterable[str], *, field: str, allow_builtin: bool = True
) -> dict[str, int]:
    """Pools and slot counts from ``"emails=2,reports=1"`` (a settings value)
    or ``["emails=2", "reports=1"]`` (repeated ``--pool`` options). Every
    mistake — no ``=``, a bad name, a count that is not 1 to 256, a name given
    twice, a built-in pool where ``allow_builtin`` is False — is a
    ConfigurationError naming ``field``."""
    items = entries.split(",") if isinstance(entries, str) else list(entries)
    pools: dict[str, int] = {}
    for raw in items:
        item = raw.strip()
        if not item and isinstance(entries, str):
            continue  # "emails=2," and "" are fine in a settings value
        name, sep, count = item.partition("=")
        name, count = name.strip(), count.strip()
        if not sep:
            raise ConfigurationError(
                f"{field}: {item!r} is not NAME=SLOTS (e.g. emails=2)", field=field
            )
        validate_pool_name(name, field=field)
        if not allow_builtin and name in BUILTIN_POOLS:
            raise ConfigurationError(
                f"{field}: {name!r} is a built-in pool; set its slots with "
                "FLOWLEDGER_LEDGER_SLOTS / FLOWLEDGER_OUTBOUND_SLOTS",
                field=field,
            )
        if not count.isdigit() or not 1 <= int(count) <= MAX_POOL_SLOTS:
            raise ConfigurationError(
                f"{field}: pool {name!r} needs a slot count from 1 to {MAX_POOL_SLOTS}, "
                f"got {count!r}",
                field=field,
            )
        if name in pools:
            raise ConfigurationError(f"{field}: pool {name!r} is given twice", field=field)
        pools[name] = int(count)
    return pools


@dataclass(frozen=True)
class JobType:
    name: str
    pool: str
    max_attempts: int = DEFAULT_MAX_ATTEMPTS
    execution_timeout_ms: int = DEFAULT_EXECUTION_TIMEOUT_MS
    priority: int = DEFAULT_PRIORITY

    def __post_init__(self) -> None:
        if not self.name or len(self.name) > 64:
            raise ConfigurationError("job type name must be 1 to 64 characters", field="name")
        validate_pool_name(self.pool)
        if self.max_attempts < 1:
            raise ConfigurationError("maxAttempts must be at least 1", field="maxAttempts")
        if self.execution_timeout_ms < 1:
            raise ConfigurationError(
                "executionTimeoutMs must be positive", field="executionTimeoutMs"
            )


class JobTypeRegistry:
    """The job types of one process by name, and the pools they may name
    (the built-in pools plus those declared with :meth:`declare_pools`)."""

    def __init__(self, types: Iterable[JobType] = (), *, pools: Iterable[str] = ()) -> None:
        self._pools: set[str] = set(BUILTIN_POOLS)
        self._types: dict[str, JobType] = {}
        self.declare_pools(pools)
        for job_type in types:
            self.register(job_type)

    @property
    def pools(self) -> frozenset[str]:
        return frozenset(self._pools)

    def declare_pools(self, pools: Iterable[str] | Mapping[str, int]) -> None:
        """Let job types name ``pools`` (names only; slots are a worker's)."""
        for name in pools:
            self._pools.add(validate_pool_name(name))

    def register(self, job_type: JobType, *, replace: bool = False) -> JobType:
        """Register ``job_type``; re-registering the same definition is a
        no-op. Its pool must be declared; a name registered with another
        pool or budget is refused unless ``replace``."""
        if job_type.pool not in self._pools:
            declared = ", ".join(sorted(self._pools))
            raise ConfigurationError(
                f"job type {job_type.name!r} names unknown pool {job_type.pool!r} "
                f"(declared pools: {declared}); declare it in FLOWLEDGER_POOLS or with "
                "flowledger worker --pool NAME=SLOTS",
                field="pool",
            )
        existing = self._types.get(job_type.name)
        if existing is not None and existing != job_type and not replace:
            raise ConfigurationError(
                f"job type {job_type.name!r} is already registered with another pool or budget",
                field="name",
            )
        self._types[job_type.name] = job_type
        return job_type

    def get(self, name: str) -> JobType:
        try:
            return self._types[name]
        except KeyError:
            raise UnknownJobTypeError(f"unknown job type {name!r}", field="type") from None

    def resolve(self, ref: str | JobType) -> JobType:
        """``ref`` itself when it is a :class:`JobType`, else the registered type of that name."""
        return ref if isinstance(ref, JobType) else self.get(ref)

    def __contains__(self, name: object) -> bool:
        return name in self._types

    def __iter__(self) -> Iterator[JobType]:
        return iter(self.types())

    def types(self) -> list[JobType]:
        return sorted(self._types.values(), key=lambda t: t.name)
