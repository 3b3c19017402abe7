"""Compensation tickets (SPEC C-8, C-9): list, detail, resume, retry, note, resolve."""

from __future__ import annotations

from fastapi import APIRouter

router = APIRouter(prefix="/compensation", tags=["compensation"])
