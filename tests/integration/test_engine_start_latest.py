"""A start of the latest version (SPEC E-2; issue 15 item 2), on both
backends: the engine remembers the latest version it started and inserts
from it without reading it first, while the insert itself checks that it is
still the latest — so a version deployed since by another process is used
at once, and a form only the newer version accepts is accepted."""

from __future__ import annotations

import pytest

from flowledger.clock import ManualClock
from flowledger.db.database import Database
from flowledger.engine.errors import FormInvalidError
from tests import statement_watch
from tests.integration.engine_helpers import END, START, approval, definition, instance, new_engine


def _version(fields: list[str]) -> dict[str, object]:
    return definition(
        "latest_start",
        [START, approval("a", "ann"), END],
        [("start", "a"), ("a", "end")],
        form=[{"key": name, "type": "string"} for name in fields],
    )


def _version_reads(seen: list[str]) -> list[str]:
    return [s for s in seen if s.lstrip().startswith("SELECT workflow_definitions.id")]


async def test_a_second_start_inserts_from_the_remembered_version_E2(
    db: Database, clock: ManualClock
) -> None:
    engine = new_engine(db, clock)
    await engine.deploy(_version(["title"]), actor="a")
    with statement_watch.watched(db) as first:
        one = await engine.start("latest_start", form={"title": "x"}, initiator="u")
    with statement_watch.watched(db) as second:
        two = await engine.start("latest_start", form={"title": "y"}, initiator="u")
    assert len(_version_reads(first)) == 1
    assert _version_reads(second) == []  # the insert checks the version itself
    for iid in (one, two):
        assert (await instance(db, iid))["definition_version"] == 1


async def test_a_version_deployed_by_another_process_is_started_at_once_E2(
    db: Database, clock: ManualClock
) -> None:
    here, elsewhere = new_engine(db, clock), new_engine(db, clock)
    await here.deploy(_version(["title"]), actor="a")
    first = await here.start("latest_start", form={"title": "x"}, initiator="u")
    await elsewhere.deploy(_version(["title", "note"]), actor="a")  # this engine never sees it
    # version 2 accepts what version 1 accepts, and the field only it has
    plain = await here.start("latest_start", form={"title": "y"}, initiator="u")
    noted = await here.start("latest_start", form={"title": "z", "note": "n"}, initiator="u")
    assert (await instance(db, first))["definition_version"] == 1
    assert (await instance(db, plain))["definition_version"] == 2
    assert (await instance(db, noted))["definition_version"] == 2
    assert (await instance(db, noted))["form_data"] == {"title": "z", "note": "n"}


async def test_a_form_only_the_newer_version_accepts_is_accepted_E2(
    db: Database, clock: ManualClock
) -> None:
    here, elsewhere = new_engine(db, clock), new_engine(db, clock)
    await here.deploy(_version(["title"]), actor="a")
    await here.start("latest_start", form={"title": "x"}, initiator="u")  # remembers v1
    await elsewhere.deploy(_version(["title", "note"]), actor="a")
    noted = await here.start("latest_start", form={"note": "n"}, initiator="u")
    assert (await instance(db, noted))["definition_version"] == 2
    with pytest.raises(FormInvalidError) as refused:  # neither version knows it
        await here.start("latest_start", form={"other": 1}, initiator="u")
    assert refused.value.field == "form.other"
