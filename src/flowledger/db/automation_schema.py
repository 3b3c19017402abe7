"""The declared schema of automation rules (SPEC X-6). Table and index
definitions only; they share :data:`flowledger.db.schema.metadata`.

A rule belongs to one tenant; ``event_types`` (a JSON list of event type
names, ``*`` for every type) and the optional ``definition_key`` and
``condition`` say which outbox events it reacts to; ``actions`` is the JSON
list of its actions (http / updateData / notify) as validated by
:mod:`flowledger.events.automation_rules`, with secret header values
encrypted.
"""

from __future__ import annotations

from sqlalchemy import Boolean, Column, Index, String, Table, Text

from flowledger.db.schema import metadata
from flowledger.db.types import BigId, JsonType, UTCDateTime

workflow_automation_rules = Table(
    "workflow_automation_rules",
    metadata,
    Column("id", BigId, primary_key=True, autoincrement=True),
    Column("tenant_id", String(64), nullable=False),
    Column("name", String(255), nullable=False),
    Column("event_types", JsonType, nullable=False),
    Column("definition_key", String(64)),
    Column("condition", Text),
    Column("actions", JsonType, nullable=False),
    Column("enabled", Boolean, nullable=False),
    Column("created_by", String(128), nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
    # the event relay's lookup (a tenant's enabled rules, one probe when it
    # has none) and the API's tenant-scoped list, newest first
    Index("ix_workflow_automation_rules_tenant_enabled", "tenant_id", "enabled", "id"),
)
