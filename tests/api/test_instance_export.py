"""Export of the instance list (SPEC O-2): CSV (UTF-8 BOM, Chinese text,
formula injection neutralised) and XLSX (XlsxWriter, read back with
openpyxl: header, cells, note row), at most 10,000 rows with headers saying
how many matched and whether the file is truncated, the list's filters and
the caller's tenants applied. 10,001 instances are bulk inserted by the
bench filler (:mod:`bench.monitor_fill`)."""

from __future__ import annotations

import csv
import io
from datetime import UTC, datetime

import openpyxl
import pytest
from bench.monitor_fill import fill_instances

from tests.api.conftest import Api, People, approval


def _csv(content: bytes) -> list[list[str]]:
    assert content.startswith(b"\xef\xbb\xbf"), "UTF-8 BOM first"
    return list(csv.reader(io.StringIO(content.decode("utf-8-sig"))))


@pytest.fixture
async def leave(api: Api, people: People) -> None:
    await api.deploy(people.root, approval())


async def test_csv_has_bom_chinese_text_and_neutralised_formulas_O2(
    api: Api, people: People, leave: None
) -> None:
    first = await api.start(people.ann, form={"days": 1, "note": "=cmd|' /C calc'!A0"})
    api.clock.advance(seconds=1)
    second = await api.start(people.ann, form={"days": 2, "note": "出差 上海"})
    api.clock.advance(seconds=1)
    third = await api.start(people.ann, form={"days": 3, "note": "@SUM(1+1)"})
    for bad in ("+1", "-2"):
        api.clock.advance(seconds=1)
        await api.start(people.ann, form={"days": 4, "note": bad})
    response = await api.get("/instances/export", people.mon, format="csv")
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/csv")
    assert response.headers["x-total-count"] == "5"
    assert response.headers["x-truncated"] == "false"
    assert "attachment" in response.headers["content-disposition"]
    rows = _csv(response.content)
    header = rows[0]
    assert header[:6] == [
        "id",
        "tenant",
        "definitionKey",
        "definitionVersion",
        "status",
        "initiator",
    ]
    assert "form.note" in header and "form.days" in header
    by_id = {int(r[0]): dict(zip(header, r, strict=True)) for r in rows[1:]}
    assert len(by_id) == 5
    assert by_id[first["id"]]["form.note"] == "'=cmd|' /C calc'!A0"
    assert by_id[second["id"]]["form.note"] == "出差 上海"
    assert by_id[third["id"]]["form.note"] == "'@SUM(1+1)"
    assert sorted(r["form.note"] for r in by_id.values() if r["form.days"] == "4") == [
        "'+1",
        "'-2",
    ]
    row = by_id[first["id"]]
    assert row["status"] == "running" and row["currentNodes"] == "manager"
    assert row["currentAssignees"] == "mia" and row["form.days"] == "1"
    assert row["traceId"] == first["traceId"]


async def test_xlsx_opens_with_openpyxl_and_has_the_cells_O2(
    api: Api, people: People, leave: None, tmp_path: object
) -> None:
    started = await api.start(people.ann, form={"days": 7, "note": '=HYPERLINK("x")'})
    api.clock.advance(seconds=1)
    chinese = await api.start(people.ann, form={"days": 2, "note": "年假"})
    response = await api.get("/instances/export", people.mon, format="xlsx")
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith(
        "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
    )
    assert response.headers["x-total-count"] == "2"
    assert response.headers["x-truncated"] == "false"
    book = openpyxl.load_workbook(io.BytesIO(response.content), read_only=True)
    sheet = book["instances"]
    rows = [list(r) for r in sheet.iter_rows(values_only=True)]
    header = rows[0]
    assert header[0] == "id" and "form.note" in header
    col = {name: header.index(name) for name in header}
    data = {r[0]: r for r in rows[1:3]}
    assert set(data) == {started["id"], chinese["id"]}
    assert data[started["id"]][col["form.note"]] == '\'=HYPERLINK("x")'
    assert data[started["id"]][col["form.days"]] == 7
    assert data[started["id"]][col["status"]] == "running"
    assert data[chinese["id"]][col["form.note"]] == "年假"
    assert data[chinese["id"]][col["currentAssignees"]] == "mia"
    note = [r for r in rows[3:] if r[0]]
    assert note == [["Exported all 2 matching instances."] + [None] * (len(header) - 1)]


async def test_export_applies_filters_and_tenants_O2(api: Api, people: People, leave: None) -> None:
    await api.deploy(people.root, approval("trip"))
    leave_one = await api.start(people.ann)
    await api.start(people.root, "trip", initiator="max")
    response = await api.get("/instances/export", people.mon, definitionKey="leave")
    rows = _csv(response.content)
    assert [int(r[0]) for r in rows[1:]] == [leave_one["id"]]
    assert response.headers["x-total-count"] == "1"
    other = await api.token("olga", "workflow:instance:monitor", tenants=("other",))
    empty = await api.get("/instances/export", other, format="csv")
    assert empty.status_code == 200 and empty.headers["x-total-count"] == "0"
    assert len(_csv(empty.content)) == 1  # the header only
    assert (await api.get("/instances/export", people.ann)).status_code == 403
    bad = await api.get("/instances/export", people.mon, format="pdf")
    assert bad.status_code == 422 and bad.json()["field"] == "query.format"


@pytest.mark.timeout(300)
async def test_10001_matching_rows_give_10000_and_say_truncated_O2(
    api: Api, people: People
) -> None:
    await fill_instances(
        api.db,
        10_001,
        now=datetime.now(UTC),
        tenants=("default",),
        children=False,
        form_note=lambda k: "=cmd" if k == 10_000 else f"备注 {k}",
    )
    csv_response = await api.get("/instances/export", people.mon, format="csv")
    assert csv_response.status_code == 200
    assert csv_response.headers["x-total-count"] == "10001"
    assert csv_response.headers["x-exported-count"] == "10000"
    assert csv_response.headers["x-truncated"] == "true"
    rows = _csv(csv_response.content)
    assert len(rows) == 1 + 10_000
    ids = [int(r[0]) for r in rows[1:]]
    assert ids == sorted(ids, reverse=True) and len(set(ids)) == 10_000
    note = rows[0].index("form.note")
    assert rows[1][note] == "'=cmd"  # the newest row, neutralised
    xlsx = await api.get("/instances/export", people.mon, format="xlsx")
    assert xlsx.headers["x-truncated"] == "true"
    sheet = openpyxl.load_workbook(io.BytesIO(xlsx.content), read_only=True)["instances"]
    values = [r for r in sheet.iter_rows(values_only=True) if r[0] is not None]
    assert len(values) == 1 + 10_000 + 1
    assert values[-1][0] == (
        "Exported the first 10000 of 10001 matching instances (truncated at 10000)."
    )
