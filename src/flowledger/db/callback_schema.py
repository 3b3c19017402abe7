"""The declared schema of recorded external callbacks (SPEC X-1 async triggers,
X-2 external approvals). Table and index definitions only; they share
:data:`flowledger.db.schema.metadata`."""

from __future__ import annotations

from flowledger.db.schema import metadata  # noqa: F401
