"""Test databases: a fresh PostgreSQL database (created on the server named by
FLOWLEDGER_TEST_PG_URL and dropped afterwards) or a fresh SQLite file. Never
skips: an unreachable PostgreSQL is a test failure.

A database with the declared schema is cloned from a template made once per
test session (``CREATE DATABASE … TEMPLATE`` on PostgreSQL, a file copy on
SQLite): every test still gets its own fresh database, without paying for
``create_all`` each time.

On PostgreSQL a clone is recycled instead of dropped (creating and dropping a
10 MB database costs 0.3 to 2 s; a reset 30 ms): after the test every other
connection to it is terminated, its schema is compared with the template's
(tables, columns, constraints, indexes, triggers, functions, extensions),
and only when nothing changed are its rows deleted and its sequences
restarted — a test that changed the schema gets its clone dropped. While it
waits in the pool a clone accepts no connections, so a straggling process of
an earlier test cannot write into the next one's database, and it is renamed
when taken, so every test still sees a database name of its own. The pool
is per process (each xdist worker has its own) and is dropped with the
template."""

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


# what a test may not have changed for its clone to be reused
_SCHEMA_FINGERPRINT = """
SELECT md5(concat_ws('|',
  (SELECT string_agg(c.relname::text || ':' || c.relkind::text, ',' ORDER BY c.relname)
     FROM pg_class c WHERE c.relnamespace = 'public'::regnamespace),
  (SELECT string_agg(a.attrelid::regclass::text || '.' || a.attname::text || ':'
                     || a.atttypid::text || ':' || a.attnotnull::text, ','
                     ORDER BY a.attrelid::regclass::text, a.attnum)
     FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
    WHERE c.relnamespace = 'public'::regnamespace AND a.attnum > 0
      AND NOT a.attisdropped),
  (SELECT string_agg(conname::text || ':' || pg_get_constraintdef(oid), ',' ORDER BY conname)
     FROM pg_constraint WHERE connamespace = 'public'::regnamespace),
  (SELECT string_agg(tgname, ',' ORDER BY tgname) FROM pg_trigger WHERE NOT tgisinternal),
  (SELECT string_agg(proname, ',' ORDER BY proname)
     FROM pg_proc WHERE pronamespace = 'public'::regnamespace),
  (SELECT string_agg(extname, ',' ORDER BY extname) FROM pg_extension)))
"""

_pool: dict[str, list[str]] = {}  # template → clones ready for the next test
_fingerprints: dict[str, str] = {}  # template → the schema its clones must keep


def _server(*statements: str) -> None:
    """Run ``statements`` in turn on one autocommit connection to the server."""
    with psycopg.connect(_server_conninfo(), autocommit=True) as conn:
        for sql in statements:
            conn.execute(sql)


def _drop(name: str) -> None:
    _server(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _fingerprint(name: str) -> str:
    with psycopg.connect(pg_url(name), autocommit=True) as conn:
        row = conn.execute(_SCHEMA_FINGERPRINT).fetchone()
    assert row is not None
    return str(row[0])


def _take(template: str) -> str:
    name = f"fl_test_{uuid.uuid4().hex[:12]}"
    ready = _pool.get(template)
    if ready:
        # a new name per test, as if created: caches keyed by URL stay right
        _server(
            f'ALTER DATABASE "{ready.pop()}" RENAME TO "{name}"',
            f'ALTER DATABASE "{name}" WITH ALLOW_CONNECTIONS true',
        )
        return name
    _server(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
    if template not in _fingerprints:
        _fingerprints[template] = _fingerprint(name)
    return name


def _recycle(template: str, name: str) -> bool:
    """Reset ``name`` to its template's empty state; False when it cannot be
    (its schema changed), and then it must be dropped."""
    with psycopg.connect(pg_url(name)) as conn:
        conn.execute(
            "SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
        row = conn.execute(_SCHEMA_FINGERPRINT).fetchone()
        if row is None or row[0] != _fingerprints[template]:
            return False
        tables = [
            r[0]
            for r in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
        ]
        sequences = [
            r[0]
            for r in conn.execute(
                "SELECT sequencename FROM pg_sequences WHERE schemaname = 'public'"
            )
        ]
        conn.execute("SET LOCAL session_replication_role = replica")  # no FK order needed
        conn.execute(";".join(f'DELETE FROM "{t}"' for t in tables) or "SELECT 1")
        if sequences:
            conn.execute(";".join(f'ALTER SEQUENCE "{q}" RESTART' for q in sequences))
        conn.commit()
    _server(
        f'ALTER DATABASE "{name}" WITH ALLOW_CONNECTIONS false',
        f"SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity WHERE datname = '{name}'",
    )
    return True


def drop_pool(template: str) -> None:
    """Drop the clones of ``template`` this process keeps (at session end)."""
    for name in _pool.pop(template, []):
        _drop(name)
    _fingerprints.pop(template, None)


@contextmanager
def pg_database(template: str | None = None) -> Iterator[str]:
    """A uniquely named database for one test (a clone of ``template`` if
    given, recycled after; otherwise an empty one, dropped after); yields its
    URL."""
    if template is not None:
        name = _take(template)
        try:
            yield pg_url(name)
        finally:
            try:
                recycled = _recycle(template, name)
            except psycopg.Error:
                recycled = False
            if recycled:
                _pool.setdefault(template, []).append(name)
            else:
                _drop(name)
        return
    name = f"fl_test_{uuid.uuid4().hex[:12]}"
    _server(f'CREATE DATABASE "{name}"')
    try:
        yield pg_url(name)
    finally:
        _drop(name)


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
