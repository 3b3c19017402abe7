"""Test databases: a fresh PostgreSQL database (created on the server named by
FLOWLEDGER_TEST_PG_URL and dropped afterwards) or a fresh SQLite file. Never
skips: an unreachable PostgreSQL is a test failure."""

from __future__ import annotations

import os
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


@contextmanager
def pg_database() -> Iterator[str]:
    """Create a uniquely named database; yield its URL; drop it."""
    name = f"fl_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(_server_conninfo(), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield make_url(PG_SERVER_URL).set(database=name).render_as_string(hide_password=False)
    finally:
        with psycopg.connect(_server_conninfo(), autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextmanager
def sqlite_database(folder: Path) -> Iterator[str]:
    yield f"sqlite:///{folder / f'fl_{uuid.uuid4().hex[:8]}.db'}"


@contextmanager
def database_url(backend: str, folder: Path) -> Iterator[str]:
    if backend == "postgresql":
        with pg_database() as url:
            yield url
    else:
        with sqlite_database(folder) as url:
            yield url
