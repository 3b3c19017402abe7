"""Signed callbacks from external systems (SPEC X-1 async triggers, X-2 external approvals)."""

from __future__ import annotations

from fastapi import APIRouter

router = APIRouter(prefix="/callbacks", tags=["callbacks"])
