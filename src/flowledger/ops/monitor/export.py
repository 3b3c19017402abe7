"""Export of the instance list (SPEC O-2) as CSV or XLSX: at most
:data:`MAX_ROWS` rows of the list's filter and sort, read in keyset batches
(:func:`flowledger.ops.monitor.queries.export_batches`) so that memory stays
constant whatever the size.

- CSV is produced batch by batch as the response streams: UTF-8 with a BOM
  (Excel then opens Chinese text correctly), CRLF line ends.
- XLSX is written by XlsxWriter in ``constant_memory`` mode (rows flushed to
  a temporary file as they are written; the writer runs in a worker
  thread), then the finished file is streamed in chunks and deleted. A note
  row after the data says how many instances matched and whether the export
  was truncated.

Columns: the instance's own fields, its current nodes and assignees, then
one ``form.<key>`` column per top-level form field met in the exported rows
(sorted by key, at most :data:`MAX_FORM_COLUMNS`); nested values are JSON
text. Formula injection: every text cell starting with ``=``, ``+``, ``-``,
``@``, a tab or a carriage return is prefixed with ``'`` (OWASP's advice), and
XLSX cells are always written as strings or numbers, never as formulas.
"""

from __future__ import annotations

import asyncio
import contextlib
import csv
import io
import json
import os
import tempfile
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import xlsxwriter

from flowledger.db.database import Database
from flowledger.ops.monitor.filters import InstanceFilter
from flowledger.ops.monitor.queries import Sort, count, export_batches, form_keys

MAX_ROWS = 10_000
MAX_FORM_COLUMNS = 100
CHUNK = 64 * 1024
BOM = "\ufeff"
_DANGEROUS = ("=", "+", "-", "@", "\t", "\r")

BASE_COLUMNS = [  # (header, row key)
    ("id", "id"),
    ("tenant", "tenant_id"),
    ("definitionKey", "definition_key"),
    ("definitionVersion", "definition_version"),
    ("status", "status"),
    ("initiator", "initiator"),
    ("currentNodes", "current_nodes"),
    ("currentAssignees", "current_assignees"),
    ("createdAt", "created_at"),
    ("updatedAt", "updated_at"),
    ("finishedAt", "finished_at"),
    ("parentInstanceId", "parent_instance_id"),
    ("traceId", "trace_id"),
    ("error", "error"),
]


def neutralise(text: str) -> str:
    """``text`` made safe from spreadsheet formula injection."""
    return "'" + text if text.startswith(_DANGEROUS) else text


@dataclass(frozen=True)
class ExportPlan:
    """What an export will contain, known before the first byte is sent."""

    matched: int
    exported: int
    form_keys: list[str]

    @property
    def truncated(self) -> bool:
        return self.matched > self.exported

    @property
    def headers(self) -> list[str]:
        return [h for h, _ in BASE_COLUMNS] + [f"form.{k}" for k in self.form_keys]

    def note(self) -> str:
        if self.truncated:
            return (
                f"Exported the first {self.exported} of {self.matched} matching instances "
                f"(truncated at {MAX_ROWS})."
            )
        return f"Exported all {self.matched} matching instances."


async def plan_export(
    db: Database, flt: InstanceFilter, *, now: datetime, sort: Sort
) -> ExportPlan:
    """Count the matches and collect the form columns of the exported rows
    (two queries)."""
    async with db.read() as conn:
        matched = await count(conn, flt, now=now)
        keys = await form_keys(
            conn,
            flt,
            now=now,
            sort=sort,
            max_rows=MAX_ROWS,
            limit=MAX_FORM_COLUMNS,
        )
    return ExportPlan(matched=matched, exported=min(matched, MAX_ROWS), form_keys=keys)


def _value(value: Any) -> Any:
    """A cell value: numbers stay numbers, everything else becomes safe text."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return value
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return neutralise(", ".join(value))
    if isinstance(value, dict | list):
        return neutralise(json.dumps(value, ensure_ascii=False, sort_keys=True))
    return neutralise(str(value))


def cells(row: dict[str, Any], plan: ExportPlan) -> list[Any]:
    form = row["form_data"] or {}
    out = [_value(row[key]) for _, key in BASE_COLUMNS]
    out.extend(_value(form.get(key)) for key in plan.form_keys)
    return out


async def csv_stream(
    db: Database, flt: InstanceFilter, plan: ExportPlan, *, now: datetime, sort: Sort
) -> AsyncIterator[bytes]:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(plan.headers)
    yield (BOM + buffer.getvalue()).encode("utf-8")
    async for rows in export_batches(db, flt, now=now, sort=sort, max_rows=plan.exported):
        buffer.seek(0)
        buffer.truncate()
        for row in rows:
            writer.writerow(cells(row, plan))
        yield buffer.getvalue().encode("utf-8")


def _write_rows(sheet: Any, start: int, rows: list[list[Any]]) -> None:
    for offset, values in enumerate(rows):
        for col, value in enumerate(values):
            if isinstance(value, int | float):
                sheet.write_number(start + offset, col, value)
            else:
                sheet.write_string(start + offset, col, value)


async def xlsx_file(
    db: Database, flt: InstanceFilter, plan: ExportPlan, *, now: datetime, sort: Sort
) -> str:
    """Write the workbook to a temporary file and return its path (the
    caller streams and deletes it)."""
    handle, path = tempfile.mkstemp(prefix="flowledger-export-", suffix=".xlsx")
    os.close(handle)
    book = xlsxwriter.Workbook(path, {"constant_memory": True, "strings_to_formulas": False})
    try:
        sheet = book.add_worksheet("instances")
        bold = book.add_format({"bold": True})
        for col, header in enumerate(plan.headers):
            sheet.write_string(0, col, header, bold)
        row_no = 1
        async for rows in export_batches(db, flt, now=now, sort=sort, max_rows=plan.exported):
            values = [cells(row, plan) for row in rows]
            await asyncio.to_thread(_write_rows, sheet, row_no, values)
            row_no += len(values)
        sheet.write_string(row_no + 1, 0, plan.note(), bold)
        await asyncio.to_thread(book.close)
    except BaseException:
        os.unlink(path)
        raise
    return path


async def file_chunks(path: str) -> AsyncIterator[bytes]:
    """The file's bytes in chunks; the file is deleted afterwards."""
    try:
        with open(path, "rb") as handle:  # noqa: ASYNC230 - local temp file, small reads
            while chunk := handle.read(CHUNK):
                yield chunk
    finally:
        remove(path)


def remove(path: str) -> None:
    """Delete a finished export file (it may already be gone)."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
