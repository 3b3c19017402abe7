"""Process settings, read from the environment with the ``FLOWLEDGER_`` prefix.

Owns every tunable knob of a flowledger process and the normalisation of
database URLs as users write them (``postgresql://user@host:5432/db``,
``sqlite:///path``) into the async driver URLs SQLAlchemy needs. It must never
open a connection.
"""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

DEFAULT_DATABASE_URL = "sqlite:///./flowledger.db"


class Settings(BaseSettings):
    """All settings of one flowledger process."""

    model_config = SettingsConfigDict(env_prefix="FLOWLEDGER_", extra="ignore")

    database_url: str = Field(default=DEFAULT_DATABASE_URL)
    db_pool_size: int = Field(default=10, ge=1, le=200)
    # PostgreSQL behind a transaction-mode pooler such as PgBouncer (issue 34
    # item 5, docs/operations.md): the wake listener's LISTEN needs a session
    # of its own, so it connects here — straight to the server, past the
    # pooler (empty: database_url; when that is a pooler, hints are lost and
    # polling alone finds the work) — and server-side prepared statements are
    # turned off where the pooler cannot carry them (PgBouncer before 1.21,
    # or max_prepared_statements = 0)
    listen_database_url: str = ""
    db_prepared_statements: bool = True
    # a streaming replica (issue 34 item 6): the console's heavy read models
    # (lists, counts, exports, analytics, health inspection) read it;
    # everything that decides or writes reads the primary (empty: no replica)
    read_database_url: str = ""

    # worker (SPEC L-6, L-10, L-11)
    ledger_slots: int = Field(default=4, ge=1, le=256)
    outbound_slots: int = Field(default=4, ge=1, le=256)
    poll_interval_s: float = Field(default=2.0, gt=0)
    lease_ms: int = Field(default=60_000, ge=1_000)
    lease_renew_interval_s: float = Field(default=15.0, gt=0)
    shutdown_grace_s: float = Field(default=30.0, ge=0)
    heartbeat_interval_s: float = Field(default=15.0, gt=0)
    drain_interval_s: float = Field(default=60.0, gt=0)
    # user-defined pools beside the two built-in ones (issue 15 item 5):
    # "emails=2,reports=1" — name=slots, comma-separated; checked (with a
    # ConfigurationError naming FLOWLEDGER_POOLS) by flowledger.ledger.types.parse_pools
    pools: str = ""

    # outbound HTTP (SPEC X-4, L-16, L-17): FLOWLEDGER_OUTBOUND_ALLOW is a
    # comma-separated allow-list of CIDRs (10.20.0.0/16) and host:port
    # (127.0.0.1:8123, [::1]:8443, erp.internal:443) for on-premises targets
    outbound_allow: str = ""
    outbound_connect_timeout_s: float = Field(default=5.0, gt=0)
    outbound_read_timeout_s: float = Field(default=15.0, gt=0)
    outbound_max_body_bytes: int = Field(default=65_536, ge=0)

    # notifications (SPEC X-7): SMTP for email, an HTTP gateway for SMS
    smtp_host: str = "127.0.0.1"
    smtp_port: int = Field(default=25, ge=1, le=65_535)
    smtp_username: str = ""
    smtp_password: str = ""
    smtp_from: str = "flowledger@localhost"
    smtp_starttls: bool = False
    smtp_timeout_s: float = Field(default=10, gt=0)
    sms_gateway_url: str = ""
    sms_gateway_token: str = ""

    # secrets at rest (connector credentials, webhook secrets): a Fernet key
    # (urlsafe base64 of 32 bytes). When unset, the key is read from
    # ``secret_key_file``, which is created (mode 0600) on first use.
    secret_key: str = ""
    secret_key_file: str = "./flowledger.key"
    # HMAC secret that external systems use to sign their callbacks
    # (POST /callbacks/trigger/{jobId}, /callbacks/external/{taskId}); callbacks
    # are refused while it is empty
    callback_secret: str = ""
    # how old a signed timestamp may be (callbacks and webhook receivers)
    signature_tolerance_s: int = Field(default=300, ge=1)

    # compensation ticket attachments (SPEC C-9)
    attachments_dir: str = "./flowledger-attachments"
    attachment_max_bytes: int = Field(default=5 * 1024 * 1024, ge=1)
    # administrators who get repair tasks (SPEC C-3), per tenant:
    # "tenantA:alice|bob;*:admin" ("*" for the tenants not named); with no
    # entry for the tenant, the users holding role workflow_admin in it
    admin_users: str = ""

    # alerting and Prometheus (SPEC O-22): how often the leader evaluates the
    # alert rules; a bearer token GET /metrics requires (empty: open)
    alert_eval_interval_s: float = Field(default=60.0, gt=0)
    metrics_token: str = ""
    # health history (SPEC O-16): the leader-gated snapshot interval (the
    # retention policy workflow_health_snapshots decides how long they stay)
    health_snapshot_interval_s: float = Field(default=300.0, gt=0)
    # analytics (SPEC O-14): the time zone of the daily panel when a request
    # names none (IANA name; empty: the server's zone)
    analytics_time_zone: str = ""
    # data retention (SPEC O-20): the daily run's local time (HH:MM) and zone
    # (empty: the server's), and the check interval of the service
    retention_time_of_day: str = Field(default="03:00", pattern=r"^([01]\d|2[0-3]):[0-5]\d$")
    retention_time_zone: str = ""
    retention_interval_s: float = Field(default=60.0, gt=0)
    # partitioned attempts history (PostgreSQL; issue 34 item 1): how many
    # UTC days ahead of today the history-partitions service keeps a day
    # partition of workflow_job_executions, and how often it checks
    partition_ahead_days: int = Field(default=7, ge=1, le=90)
    partition_interval_s: float = Field(default=3600.0, gt=0)
    # hostile-input limits (issue 17; docs/limits.md): the API's body cap
    # (413 above it), JSON nesting depth, the serialised size of form data /
    # payloads and of definitions (``source`` text or ``definition`` object)
    max_json_body_bytes: int = Field(default=1024 * 1024, ge=1024)
    max_json_depth: int = Field(default=32, ge=4, le=200)
    max_form_bytes: int = Field(default=64 * 1024, ge=256)
    max_definition_bytes: int = Field(default=256 * 1024, ge=1024)
    # YAML definitions: at most this many aliases (``*ref``) in one document
    max_yaml_aliases: int = Field(default=32, ge=0)
    # schedules: the shortest period between two launches of one cron
    schedule_min_period_s: int = Field(default=60, ge=1)


def get_settings() -> Settings:
    """The settings as the environment gives them now. Only the process entry
    points call it — the CLI and ``build_runtime`` without settings — and
    pass the result down; nothing caches it."""
    return Settings()
