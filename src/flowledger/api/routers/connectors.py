"""Connectors (SPEC X-3): create, list, read, update, delete; secrets are write-only."""

from __future__ import annotations

from fastapi import APIRouter

router = APIRouter(prefix="/connectors", tags=["connectors"])
