"""Test databases: a fresh PostgreSQL database (created on the server named by
FLOWLEDGER_TEST_PG_URL and dropped afterwards) or a fresh SQLite file. Never
skips: an unreachable PostgreSQL is a test failure.

A database with the declared schema is cloned from a template made once per
test session (``CREATE DATABASE … TEMPLATE`` on PostgreSQL, a file copy on
SQLite): every test still gets its own fresh database, without paying for
``create_all`` each time."""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg
from sqlalchemy.engine import make_url

PG_SERVER_URL = os.environ.get(
    "FLOWLEDGER_TEST_PG_URL", "postgresql://postgres@127.0.0.1:5432/postgres"
)


def _server_conninfo() -> str:
    return (
        make_url(PG_SERVER_URL).set(drivername="postgresql").render_as_string(hide_password=False)
    )


def pg_url(name: str) -> str:
    return make_url(PG_SERVER_URL).set(database=name).render_as_string(hide_password=False)


@contextmanager
def pg_database(template: str | None = None) -> Iterator[str]:
    """Create a uniquely named database (a copy of ``template`` if given);
    yield its URL; drop it."""
    name = f"fl_test_{uuid.uuid4().hex[:12]}"
    copy = f' TEMPLATE "{template}"' if template else ""
    with psycopg.connect(_server_conninfo(), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"{copy}')
    try:
        yield pg_url(name)
    finally:
        with psycopg.connect(_server_conninfo(), autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextmanager
def sqlite_database(folder: Path, template: Path | None = None) -> Iterator[str]:
    path = folder / f"fl_{uuid.uuid4().hex[:8]}.db"
    if template is not None:
        shutil.copyfile(template, path)
    yield f"sqlite:///{path}"


@contextmanager
def database_url(backend: str, folder: Path, template: str | Path | None = None) -> Iterator[str]:
    """A fresh database of ``backend``: empty, or a copy of ``template`` (a
    PostgreSQL database name or an SQLite file)."""
    if backend == "postgresql":
        with pg_database(str(template) if template else None) as url:
            yield url
    else:
        with sqlite_database(folder, Path(template) if template else None) as url:
            yield url
