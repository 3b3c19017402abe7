"""Ticket attachments (SPEC C-9 ``note``): checking an uploaded file and
storing it under ``settings.attachments_dir``.

- **size**: at most ``settings.attachment_max_bytes`` (the API reads one
  byte more than that, never the whole stream) → ``attachment_too_large``;
  an empty file → ``attachment_empty``.
- **type**: the declared content type (parameters dropped) must be on
  :data:`ALLOWED` → ``attachment_type_not_allowed``. The bytes must agree:
  PDF, PNG and JPEG are recognised by their signature (the ``filetype``
  library); text types must be UTF-8 without NUL, and JSON must parse.
- **storage**: a generated name (``<uuid hex><extension of the type>``), so
  nothing the uploader wrote reaches the file system; the uploader's file
  name is kept, cleaned, in the history row only. Files are written to a
  temporary name and renamed into place, mode 0600.

The database row is written after the file; :func:`remove` deletes the file
again when that transaction fails. A crash between the file write and the
row commit leaves an orphan file: :func:`sweep_orphans` (for the retention
service, issue 17 item 13) deletes every stored file (and leftover
``.part`` file) older than ``min_age_s`` that no history row names — the
only function here that reads the database (one ``IN`` query per 500 names).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import time
import unicodedata
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import filetype  # type: ignore[import-untyped]
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.compensation.errors import (
    AttachmentEmpty,
    AttachmentTooLarge,
    AttachmentTypeRefused,
)
from flowledger.db.compensation_schema import workflow_compensation_logs as logs

ALLOWED: dict[str, str] = {
    "application/pdf": ".pdf",
    "image/png": ".png",
    "image/jpeg": ".jpg",
    "text/plain": ".txt",
    "text/csv": ".csv",
    "application/json": ".json",
}
_SNIFFED = frozenset({"application/pdf", "image/png", "image/jpeg"})
_STORED_NAME = re.compile(r"^[0-9a-f]{32}\.[a-z]{3,4}$")
MAX_NAME = 255


def check_attachment(content_type: str | None, data: bytes, *, max_bytes: int) -> str:
    """The normalised content type of an acceptable upload; raises otherwise."""
    if len(data) > max_bytes:
        raise AttachmentTooLarge(
            f"the attachment is larger than the limit of {max_bytes} bytes",
            field="file",
            maxBytes=max_bytes,
        )
    if not data:
        raise AttachmentEmpty("the attachment is empty", field="file")
    declared = (content_type or "").split(";", 1)[0].strip().lower()
    if declared not in ALLOWED:
        raise AttachmentTypeRefused(
            f"content type {declared or '(none)'!r} is not allowed; allowed: "
            + ", ".join(sorted(ALLOWED)),
            field="file",
            allowed=sorted(ALLOWED),
        )
    if declared in _SNIFFED:
        found = filetype.guess_mime(data[:8192])
        if found != declared:
            raise AttachmentTypeRefused(
                f"the file is declared {declared} but its content is {found or 'not recognised'}",
                field="file",
                allowed=sorted(ALLOWED),
            )
        return declared
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise AttachmentTypeRefused(
            f"a {declared} attachment must be UTF-8 text", field="file", allowed=sorted(ALLOWED)
        ) from None
    if "\x00" in text:
        raise AttachmentTypeRefused(
            f"a {declared} attachment must not contain NUL", field="file", allowed=sorted(ALLOWED)
        )
    if declared == "application/json":
        try:
            json.loads(text)
        except ValueError:
            raise AttachmentTypeRefused(
                "the attachment is declared application/json but is not JSON",
                field="file",
                allowed=sorted(ALLOWED),
            ) from None
    return declared


def clean_name(name: str | None) -> str:
    """The uploader's file name for display: its last path segment, without
    control characters, at most 255 characters."""
    base = (name or "").replace("\\", "/").rsplit("/", 1)[-1]
    base = "".join(ch for ch in base if unicodedata.category(ch)[0] != "C").strip()
    return base[:MAX_NAME] or "attachment"


def _write(directory: Path, stored_name: str, data: bytes) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    temporary = directory / f".{stored_name}.part"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, directory / stored_name)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


async def store(directory: str, data: bytes, content_type: str) -> str:
    """Write ``data`` under ``directory``; returns the generated stored name."""
    stored_name = uuid.uuid4().hex + ALLOWED[content_type]
    await asyncio.to_thread(_write, Path(directory), stored_name, data)
    return stored_name


def path_of(directory: str, stored_name: str) -> Path | None:
    """The file of a stored name (None when the name is not one of ours or the file is gone)."""
    if not _STORED_NAME.fullmatch(stored_name):
        return None
    path = Path(directory) / stored_name
    return path if path.is_file() else None


def remove(directory: str, stored_name: str) -> None:
    if _STORED_NAME.fullmatch(stored_name):
        (Path(directory) / stored_name).unlink(missing_ok=True)


SWEEP_CHUNK = 500
_PART_NAME = re.compile(r"^\.[0-9a-f]{32}\.[a-z]{3,4}\.part$")


@dataclass
class SweepReport:
    removed: list[str] = field(default_factory=list)
    kept: int = 0


def _candidates(directory: Path, older_than: float) -> list[Path]:
    if not directory.is_dir():
        return []
    found = []
    for path in directory.iterdir():
        if not (_STORED_NAME.fullmatch(path.name) or _PART_NAME.fullmatch(path.name)):
            continue  # never anything that is not ours
        try:
            if path.is_file() and path.stat().st_mtime < older_than:
                found.append(path)
        except FileNotFoundError:
            continue
    return found


async def sweep_orphans(
    conn: AsyncConnection, directory: str, *, min_age_s: float = 3600.0
) -> SweepReport:
    """Delete attachment files no history row names, older than ``min_age_s``
    (a younger one may belong to an upload whose row is not committed yet)."""
    report = SweepReport()
    paths = await asyncio.to_thread(_candidates, Path(directory), time.time() - min_age_s)
    parts = [p for p in paths if p.name.endswith(".part")]
    stored = {p.name: p for p in paths if not p.name.endswith(".part")}
    names = sorted(stored)
    referenced: set[str] = set()
    for start in range(0, len(names), SWEEP_CHUNK):
        chunk = names[start : start + SWEEP_CHUNK]
        rows = await conn.execute(select(logs.c.stored_name).where(logs.c.stored_name.in_(chunk)))
        referenced.update(str(name) for name in rows.scalars())
    for path in parts + [stored[n] for n in names if n not in referenced]:
        await asyncio.to_thread(path.unlink, missing_ok=True)
        report.removed.append(path.name)
    report.kept = len(referenced)
    return report
