"""The API fixtures of ``tests/api`` (client, api helpers, people) for the
analytics and retention tests."""

from tests.api.conftest import api, app, client, engine, people  # noqa: F401
