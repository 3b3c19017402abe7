"""Job ledger operations under ``/api/workflows/engine/jobs`` (SPEC A-1,
L-24): retry, skip, batch retry, batch skip, replay preview and replay.
Mutations need ``workflow:engine:operate`` and are audited; the preview is a
read (``workflow:instance:monitor``)."""

from __future__ import annotations

from fastapi import APIRouter

router = APIRouter(prefix="/engine/jobs", tags=["jobs"])
