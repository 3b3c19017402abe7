"""Handlers of event_dispatch and webhook_delivery (SPEC X-5) and automation_action (X-6)."""

from __future__ import annotations
