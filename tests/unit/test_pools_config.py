"""User pools in the settings, on ``--pool`` and at registration (issue 15
item 5): every mistake is a ConfigurationError naming its field; the
job-type registry refuses a type naming an undeclared pool; the runtime
declares the settings' and ``--pool``'s pools and owns the registry (issue
16 item 3)."""

from __future__ import annotations

from pathlib import Path

import pytest

from flowledger.errors import ConfigurationError
from flowledger.handlers import BUILTIN_JOB_TYPES
from flowledger.ledger.types import (
    BUILTIN_POOLS,
    JobType,
    JobTypeRegistry,
    parse_pools,
)
from flowledger.runtime import build_runtime
from flowledger.settings import Settings
from flowledger.states import Pool
from flowledger.worker import HandlerRegistry, WorkerConfig, define_handler


async def _noop(ctx: object) -> None:
    return None


def test_parse_pools_reads_both_spellings() -> None:
    assert parse_pools("emails=2, reports=1,", field="FLOWLEDGER_POOLS") == {
        "emails": 2,
        "reports": 1,
    }
    assert parse_pools("", field="FLOWLEDGER_POOLS") == {}
    assert parse_pools(["workflow-ledger=8", "bulk_mail=256"], field="--pool") == {
        "workflow-ledger": 8,
        "bulk_mail": 256,
    }


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("emails", "'emails' is not NAME=SLOTS"),
        ("emails=0", "pool 'emails' needs a slot count from 1 to 256, got '0'"),
        ("emails=257", "needs a slot count from 1 to 256"),
        ("emails=-1", "needs a slot count"),
        ("emails=2.5", "needs a slot count"),
        ("emails=", "needs a slot count"),
        ("=2", "invalid pool name ''"),
        ("Emails=2", "invalid pool name 'Emails'"),
        ("9lives=1", "invalid pool name '9lives'"),
        ("e mails=1", "invalid pool name 'e mails'"),
        ("e" * 64 + "=1", "invalid pool name"),
        ("emails=1,emails=2", "pool 'emails' is given twice"),
        ("workflow-ledger=2", "'workflow-ledger' is a built-in pool"),
    ],
)
def test_a_bad_settings_value_names_the_setting(value: str, message: str) -> None:
    with pytest.raises(ConfigurationError) as caught:
        WorkerConfig.from_settings(Settings(pools=value))
    assert caught.value.field == "FLOWLEDGER_POOLS"
    assert message in caught.value.message


def test_a_bad_pool_option_names_the_option() -> None:
    with pytest.raises(ConfigurationError) as caught:
        parse_pools(["reports=1", ""], field="--pool")
    assert caught.value.field == "--pool"


def test_settings_pools_join_the_builtin_pools() -> None:
    config = WorkerConfig.from_settings(Settings(pools="emails=2,reports=1", ledger_slots=3))
    assert config.pools == {
        Pool.LEDGER.value: 3,
        Pool.OUTBOUND.value: 4,
        "emails": 2,
        "reports": 1,
    }


@pytest.mark.parametrize(
    ("pools", "message"),
    [({}, "at least one pool"), ({"Bad": 1}, "invalid pool name"), ({"x": 0}, "from 1 to 256")],
)
def test_worker_config_checks_its_pools(pools: dict[str, int], message: str) -> None:
    with pytest.raises(ConfigurationError) as caught:
        WorkerConfig(pools=pools)
    assert caught.value.field == "pools"
    assert message in caught.value.message


def test_a_type_naming_an_undeclared_pool_is_refused() -> None:
    registry = JobTypeRegistry(BUILTIN_JOB_TYPES)
    assert registry.pools == frozenset(BUILTIN_POOLS)
    with pytest.raises(ConfigurationError) as caught:
        registry.register(JobType("unit_pool_report", "unit-reports"))
    assert caught.value.field == "pool"
    assert "unknown pool 'unit-reports'" in caught.value.message
    assert "FLOWLEDGER_POOLS" in caught.value.message
    registry.declare_pools({"unit-reports": 1})
    assert registry.register(JobType("unit_pool_report", "unit-reports")).pool == "unit-reports"
    assert "unit_pool_report" in registry and "unit_pool_report" not in JobTypeRegistry()


def test_define_handler_registers_with_the_given_registry() -> None:
    registry = JobTypeRegistry(BUILTIN_JOB_TYPES, pools=["unit-mail"])
    handlers = HandlerRegistry(job_types=registry)
    handler = handlers.register("unit_pool_mail", _noop, pool="unit-mail", max_attempts=2)
    assert (
        registry.get("unit_pool_mail")
        == handler.job_type
        == JobType("unit_pool_mail", "unit-mail", max_attempts=2)
    )
    with pytest.raises(ConfigurationError) as caught:
        define_handler("unit_pool_other", _noop, pool="unit-nowhere", job_types=registry)
    assert caught.value.field == "pool"
    # a built-in type keeps its pool and budget
    assert define_handler("delay_wake", _noop, pool="unit-mail", job_types=registry).job_type == (
        registry.get("delay_wake")
    )


def test_a_pool_or_budget_beside_a_job_type_is_refused_not_ignored() -> None:
    """A JobType carries its pool and budget; an option given beside it would
    be ignored, so it is a ConfigurationError naming that option."""
    mail = JobType("unit_pool_typed", "unit-mail")
    for option, value in (
        ("pool", "unit-other"),
        ("max_attempts", 3),
        ("execution_timeout_ms", 1000),
        ("priority", 1),
    ):
        with pytest.raises(ConfigurationError) as caught:
            define_handler(mail, _noop, **{option: value})  # type: ignore[arg-type]
        assert caught.value.field == option
    assert define_handler(mail, _noop).job_type is mail


def test_the_runtime_declares_the_settings_and_option_pools(tmp_path: Path) -> None:
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'unused.db'}", pools="unit-emails=2")
    runtime = build_runtime(settings=settings, pools={"unit-only": 1, Pool.LEDGER.value: 2})
    assert runtime.handlers.job_types is runtime.job_types
    # the runtime's own registry: flowledger's types, its pools, nothing of another runtime's
    assert {t.name for t in runtime.job_types} == {t.name for t in BUILTIN_JOB_TYPES}
    assert {"unit-emails", "unit-only"} <= runtime.job_types.pools
    assert runtime.worker_config.pools == {"unit-only": 1, Pool.LEDGER.value: 2}
    plain = build_runtime(settings=settings)
    assert plain.worker_config.pools["unit-emails"] == 2
    registered = runtime.handlers.register("unit_rt_emails", _noop, pool="unit-emails")
    assert runtime.job_types.get("unit_rt_emails") == registered.job_type
    assert "unit_rt_emails" not in plain.job_types and "unit-only" not in plain.job_types.pools
