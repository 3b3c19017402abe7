"""The declared schema of connectors (SPEC X-3): connector rows with encrypted
credentials and the per-call audit. Table and index definitions only; they
share :data:`flowledger.db.schema.metadata`.

- ``connectors`` — one named outbound target per (tenant, key): base URL,
  auth kind with its public fields (``auth_username`` for basic,
  ``auth_header_name`` for an API-key header) and the secret, stored only as
  a Fernet token in ``secret_encrypted``; optional rate limit, circuit
  breaker settings, non-secret default headers, enabled flag. Ids are never
  reused (``AUTOINCREMENT`` on SQLite), so the call audit of a deleted
  connector can never be attributed to a new one.
- ``connector_calls`` — one audit row per connector call made from a job,
  including calls refused before sending (rate limit, open circuit, path
  escape). Rows outlive their connector (no foreign key): the audit keeps
  the tenant and key it was made under.
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    Column,
    Float,
    Index,
    Integer,
    String,
    Table,
    Text,
    UniqueConstraint,
)

from flowledger.db.schema import in_values as _in
from flowledger.db.schema import metadata
from flowledger.db.types import BigId, JsonType, UTCDateTime

AUTH_KINDS = ("none", "bearer", "basic", "api_key", "hmac")

connectors = Table(
    "connectors",
    metadata,
    Column("id", BigId, primary_key=True, autoincrement=True),
    Column("tenant_id", String(64), nullable=False),
    Column("key", String(64), nullable=False),
    Column("name", String(255), nullable=False),
    Column("base_url", String(2048), nullable=False),
    Column("auth_kind", String(16), nullable=False),
    Column("auth_username", String(255)),
    Column("auth_header_name", String(128)),
    Column("secret_encrypted", Text),
    Column("rate_limit_rps", Float),
    Column("rate_limit_burst", Integer),
    Column("breaker_failure_threshold", Integer, nullable=False),
    Column("breaker_reset_timeout_s", Float, nullable=False),
    Column("default_headers", JsonType, nullable=False),
    Column("enabled", Boolean, nullable=False),
    Column("created_by", String(128), nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
    CheckConstraint(_in("auth_kind", list(AUTH_KINDS)), name="auth_kind"),
    UniqueConstraint("tenant_id", "key"),
    Index("ix_connectors_tenant", "tenant_id", "id"),
    sqlite_autoincrement=True,
)

connector_calls = Table(
    "connector_calls",
    metadata,
    Column("id", BigId, primary_key=True, autoincrement=True),
    Column("connector_id", BigInteger, nullable=False),
    Column("tenant_id", String(64), nullable=False),
    Column("connector_key", String(64), nullable=False),
    Column("job_id", BigInteger),
    Column("instance_id", BigInteger),
    Column("method", String(16), nullable=False),
    Column("path", String(2048), nullable=False),
    Column("status", Integer),
    Column("outcome", String(64), nullable=False),
    Column("duration_ms", Integer, nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    Index("ix_connector_calls_connector", "connector_id", "id"),
    Index("ix_connector_calls_created", "created_at"),
)
