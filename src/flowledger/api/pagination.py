"""Keyset paging for every list (DESIGN "Lists are paged with stable
ordering"): a list answers ``{"items": [...], "next": cursor-or-null}``; the
cursor is opaque to clients — URL-safe base64 of the JSON array of the last
row's sort key (e.g. ``[createdAt, id]``). Passing it back continues after
that row, so inserts never shift a page. A cursor that does not decode to
the expected shape is 422 ``cursor_invalid`` on the field ``cursor``.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Sequence
from datetime import datetime
from typing import Annotated, Any

from fastapi import Query

from flowledger.api.errors import CursorInvalid

DEFAULT_LIMIT = 50
MAX_LIMIT = 200

Limit = Annotated[int, Query(ge=1, le=MAX_LIMIT, description="Page size (1-200).")]
Cursor = Annotated[
    str | None,
    Query(max_length=512, description="The `next` value of the previous page."),
]


def encode_cursor(values: Sequence[Any]) -> str:
    raw = json.dumps(
        [v.isoformat() if isinstance(v, datetime) else v for v in values], separators=(",", ":")
    )
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def _fail() -> CursorInvalid:
    return CursorInvalid("cursor is not a value this list gave out", field="cursor")


def decode_cursor(cursor: str | None, kinds: Sequence[type]) -> tuple[Any, ...] | None:
    """The sort key inside ``cursor``, each part checked against ``kinds``
    (``datetime`` parts are parsed from ISO text)."""
    if cursor is None:
        return None
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        values = json.loads(raw)
    except (binascii.Error, ValueError):
        raise _fail() from None
    if not isinstance(values, list) or len(values) != len(kinds):
        raise _fail()
    out: list[Any] = []
    for value, kind in zip(values, kinds, strict=True):
        if kind is datetime:
            try:
                parsed = datetime.fromisoformat(value) if isinstance(value, str) else None
            except ValueError:
                parsed = None
            if parsed is None or parsed.tzinfo is None:
                raise _fail()
            out.append(parsed)
        elif kind is int:
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**63:
                raise _fail()
            out.append(value)
        else:
            if not isinstance(value, kind):
                raise _fail()
            out.append(value)
    return tuple(out)


def cursor_for(key: Sequence[Any] | None) -> str | None:
    """The ``next`` value for a page whose query returned ``key`` (None: last page)."""
    return None if key is None else encode_cursor(key)
