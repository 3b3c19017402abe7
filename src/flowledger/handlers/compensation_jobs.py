"""Handler of compensation_action jobs (SPEC C-4, C-5, C-6)."""

from __future__ import annotations
