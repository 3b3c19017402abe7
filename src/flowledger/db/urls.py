"""Database URL normalisation: users write ``postgresql://user@host:port/db``
or ``sqlite:///path``; SQLAlchemy needs the async driver named. Owns nothing
else."""

from __future__ import annotations

from sqlalchemy.engine import URL, make_url

from flowledger.errors import ConfigurationError


def async_url(raw: str, *, field: str = "FLOWLEDGER_DATABASE_URL") -> URL:
    """The async-driver URL for a user-written database URL (``field``: the
    setting named when it is refused)."""
    try:
        url = make_url(raw)
    except Exception as exc:  # sqlalchemy raises ArgumentError with a terse text
        raise ConfigurationError(f"not a database URL: {raw!r}", field=field) from exc
    backend = url.get_backend_name()
    if backend in ("postgresql", "postgres"):
        return url.set(drivername="postgresql+psycopg")
    if backend == "sqlite":
        return url.set(drivername="sqlite+aiosqlite")
    raise ConfigurationError(
        f"unsupported database {backend!r}: use postgresql:// or sqlite:///",
        field=field,
    )


def libpq_conninfo(url: URL) -> str:
    """A libpq connection string for a PostgreSQL URL (LISTEN, the hot path)."""
    return url.set(drivername="postgresql").render_as_string(hide_password=False)


def is_sqlite(url: URL) -> bool:
    return url.get_backend_name() == "sqlite"
