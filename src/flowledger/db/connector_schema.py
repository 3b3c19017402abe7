"""The declared schema of connectors (SPEC X-3): connector rows with encrypted
credentials and the per-call audit. Table and index definitions only; they
share :data:`flowledger.db.schema.metadata`."""

from __future__ import annotations

from flowledger.db.schema import metadata  # noqa: F401
