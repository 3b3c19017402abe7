"""A user's manager (issue 31 item 4): ``set_manager`` on both backends
(unknown users, oneself and loops refused, naming the field), and
``flowledger user set-manager`` as a user runs it (a subprocess on a
migrated SQLite file, which also runs migration 0018)."""

from __future__ import annotations

from pathlib import Path

import pytest

from flowledger.access.managers import ManagerInvalid, manager_of, set_manager
from flowledger.access.tokens import create_user
from flowledger.clock import ManualClock
from flowledger.db.database import Database
from flowledger.errors import NotFoundError
from tests.cli_support import run_cli


async def test_set_manager_and_its_refusals(db: Database, clock: ManualClock) -> None:
    async with db.begin() as conn:
        for user in ("ann", "bob", "cid"):
            await create_user(conn, user, now=clock.now())
        await set_manager(conn, "ann", "bob")
        await set_manager(conn, "bob", "cid")
        assert await manager_of(conn, "ann") == "bob"
        with pytest.raises(ManagerInvalid) as loop:
            await set_manager(conn, "cid", "ann")  # ann → bob → cid
        assert loop.value.field == "manager"
        with pytest.raises(ManagerInvalid):
            await set_manager(conn, "ann", "ann")
        with pytest.raises(NotFoundError) as missing:
            await set_manager(conn, "ann", "nobody")
        assert missing.value.field == "manager"
        with pytest.raises(NotFoundError) as missing:
            await set_manager(conn, "nobody", "ann")
        assert missing.value.field == "user"
        await set_manager(conn, "ann", None)
        assert await manager_of(conn, "ann") is None


def _cli(tmp_path: Path, *args: str, code: int = 0) -> str:
    done = run_cli(tmp_path, "users.db", *args, code=code)
    return done.stdout + done.stderr


def test_the_cli_sets_and_clears_a_manager(tmp_path: Path) -> None:
    _cli(tmp_path, "migrate")
    _cli(tmp_path, "token", "create", "--user", "ann")
    _cli(tmp_path, "token", "create", "--user", "bob")
    assert "ann: manager bob" in _cli(tmp_path, "user", "set-manager", "ann", "bob")
    assert "manager_invalid" in _cli(tmp_path, "user", "set-manager", "bob", "ann", code=1)
    assert "not_found" in _cli(tmp_path, "user", "set-manager", "ann", "zed", code=1)
    assert "cleared" in _cli(tmp_path, "user", "set-manager", "ann", "--clear")
