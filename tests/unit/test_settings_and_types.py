"""Settings, database URLs as users write them, job types and claim order
(SPEC L-2, L-5, L-7); no I/O."""

from __future__ import annotations

import pytest

from flowledger.db.urls import async_url, libpq_conninfo
from flowledger.engine.job_types import CLEANUP_TYPES, PAUSABLE_TYPES
from flowledger.errors import ConfigurationError, UnknownJobTypeError
from flowledger.handlers import BUILTIN_JOB_TYPES
from flowledger.ledger.backoff import backoff_ms
from flowledger.ledger.claim import claim_order
from flowledger.ledger.types import JobType, JobTypeRegistry
from flowledger.settings import DEFAULT_DATABASE_URL, Settings
from flowledger.states import Pool


@pytest.mark.parametrize(
    ("written", "driver", "database"),
    [
        ("postgresql://postgres@127.0.0.1:5432/flow", "postgresql+psycopg", "flow"),
        ("postgres://u:p@db.internal/flow", "postgresql+psycopg", "flow"),
        ("sqlite:///./flowledger.db", "sqlite+aiosqlite", "./flowledger.db"),
        ("sqlite:////var/lib/fl.db", "sqlite+aiosqlite", "/var/lib/fl.db"),
    ],
)
def test_plain_urls_get_the_async_driver(written: str, driver: str, database: str) -> None:
    url = async_url(written)
    assert url.drivername == driver
    assert url.database == database


@pytest.mark.parametrize("bad", ["mysql://root@localhost/x", "not a url", ""])
def test_unsupported_urls_name_the_setting(bad: str) -> None:
    with pytest.raises(ConfigurationError) as info:
        async_url(bad)
    assert info.value.field == "FLOWLEDGER_DATABASE_URL"


def test_libpq_conninfo_keeps_credentials() -> None:
    conninfo = libpq_conninfo(async_url("postgresql://u:secret@h:5433/d"))
    assert conninfo == "postgresql://u:secret@h:5433/d"


def test_settings_default_to_sqlite_and_read_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("FLOWLEDGER_DATABASE_URL", raising=False)
    assert Settings().database_url == DEFAULT_DATABASE_URL
    monkeypatch.setenv("FLOWLEDGER_DATABASE_URL", "postgresql://x@h/d")
    monkeypatch.setenv("FLOWLEDGER_LEDGER_SLOTS", "7")
    settings = Settings()
    assert settings.database_url == "postgresql://x@h/d"
    assert settings.ledger_slots == 7
    assert (settings.outbound_slots, settings.poll_interval_s) == (4, 2.0)
    assert (settings.lease_ms, settings.lease_renew_interval_s) == (60_000, 15.0)


def test_builtin_types_sit_in_their_pools_L2() -> None:
    get_job_type = JobTypeRegistry(BUILTIN_JOB_TYPES).get
    ledger = {
        "delay_wake",
        "task_timeout",
        "subprocess_spawn",
        "subprocess_join",
        "schedule_launch",
    }
    outbound = {
        "trigger_dispatch",
        "external_dispatch",
        "event_dispatch",
        "webhook_delivery",
        "compensation_action",
        "automation_action",
    }
    assert {name for name in ledger if get_job_type(name).pool == Pool.LEDGER} == ledger
    assert {name for name in outbound if get_job_type(name).pool == Pool.OUTBOUND} == outbound
    assert get_job_type("compensation_action").max_attempts == 4
    assert {t.name for t in BUILTIN_JOB_TYPES} == ledger | outbound | {"alert_notification"}


def test_cleanup_and_pause_scopes_L18_L22() -> None:
    assert CLEANUP_TYPES == {
        "delay_wake",
        "task_timeout",
        "external_dispatch",
        "subprocess_spawn",
        "subprocess_join",
    }
    assert PAUSABLE_TYPES == CLEANUP_TYPES | {"trigger_dispatch"}


def test_job_type_registry_refuses_conflicts_and_unknown_names() -> None:
    registry = JobTypeRegistry()
    registry.register(JobType("unit_type_a", Pool.LEDGER, max_attempts=2))
    registry.register(JobType("unit_type_a", Pool.LEDGER, max_attempts=2))  # same: no-op
    with pytest.raises(ConfigurationError):
        registry.register(JobType("unit_type_a", Pool.OUTBOUND, max_attempts=2))
    with pytest.raises(UnknownJobTypeError):
        registry.get("unit_type_never_registered")
    with pytest.raises(ConfigurationError):
        JobType("unit_bad", Pool.LEDGER, max_attempts=0)


def test_every_fourth_claim_orders_by_due_time_L7() -> None:
    assert [claim_order(n) for n in range(1, 9)] == [
        "priority",
        "priority",
        "priority",
        "due",
        "priority",
        "priority",
        "priority",
        "due",
    ]


def test_backoff_doubles_from_30s_and_caps_at_15min_L5() -> None:
    assert [backoff_ms(n) for n in range(1, 7)] == [
        30_000,
        60_000,
        120_000,
        240_000,
        480_000,
        900_000,
    ]
    assert backoff_ms(50) == 900_000
