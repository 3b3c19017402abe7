"""Automation rules (SPEC X-6): CRUD."""

from __future__ import annotations

from fastapi import APIRouter

router = APIRouter(prefix="/automation-rules", tags=["automation"])
