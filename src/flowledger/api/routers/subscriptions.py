"""Event subscriptions (SPEC X-5): CRUD and their recorded hits."""

from __future__ import annotations

from fastapi import APIRouter

router = APIRouter(prefix="/subscriptions", tags=["subscriptions"])
