"""Handlers of the outbound node jobs: trigger_dispatch (SPEC X-1) and external_dispatch (X-2)."""

from __future__ import annotations
