"""Fixtures of the hardening tests (issue 17): the API fixtures of
``tests/api/conftest.py`` (client over ``create_app``, people with tokens)."""

from __future__ import annotations

from tests.api.conftest import api, app, client, engine, people  # noqa: F401
