"""The declared schema of event subscriptions, subscription hits and automation
rules (SPEC X-5, X-6). Table and index definitions only; they share
:data:`flowledger.db.schema.metadata`."""

from __future__ import annotations

from flowledger.db.schema import metadata  # noqa: F401
