"""The declared schema of compensation tickets and their history (SPEC C-8:
workflow_compensations, workflow_compensation_logs). Table and index
definitions only; they share :data:`flowledger.db.schema.metadata`."""

from __future__ import annotations

from flowledger.db.schema import metadata  # noqa: F401
