"""Literal substring matching with SQL ``LIKE`` (issue 17 item 7): a
keyword's ``%``, ``_`` and ``\\`` match themselves, not "anything" — so
``keyword=%`` no longer selects every job (and a ``replay-dead`` with it no
longer replays every dead job of the tenant). Every LIKE built from user
text goes through :func:`contains`. On PostgreSQL the job keyword filter is
served by the trigram indexes of migration 0012 (``pg_trgm``)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import func
from sqlalchemy.sql.elements import ColumnElement

ESCAPE = "\\"


def escape_like(text: str) -> str:
    """``text`` with LIKE's wildcards and the escape character escaped."""
    return text.replace(ESCAPE, ESCAPE * 2).replace("%", ESCAPE + "%").replace("_", ESCAPE + "_")


def contains(column: Any, text: str) -> ColumnElement[bool]:
    """``lower(column)`` contains ``text`` literally (case-insensitive)."""
    return func.lower(column).like(f"%{escape_like(text.lower())}%", escape=ESCAPE)
