"""Automatic retry backoff (SPEC L-5): 30 s after the first failed attempt,
doubling, each wait capped at 15 minutes."""

from __future__ import annotations

BASE_MS = 30_000
CAP_MS = 15 * 60 * 1000


def backoff_ms(attempt: int) -> int:
    """The wait before the next attempt after failed attempt number ``attempt`` (1-based)."""
    exponent = max(attempt, 1) - 1
    if exponent >= 16:  # 30 s * 2**16 is far past the cap; avoid huge ints
        return CAP_MS
    return min(BASE_MS * (1 << exponent), CAP_MS)
