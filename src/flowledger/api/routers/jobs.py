"""Job ledger reads under ``/api/workflows/engine/jobs`` (SPEC A-1, L-23,
L-25): list, summary, runtime status, detail, chain, diagnostic bundle,
failure clusters. Reads need ``workflow:instance:monitor``."""

from __future__ import annotations

from fastapi import APIRouter

router = APIRouter(prefix="/engine/jobs", tags=["jobs"])
