"""Schemathesis helpers shared by the API fuzz tests (SPEC A-4: no input
makes the API answer 5xx, and every status is documented — issue 17).

``FLOWLEDGER_FUZZ_EXAMPLES`` sets the examples per operation and mode
(default 15 for ``make test``; the full run of issue 17 uses 100:
``FLOWLEDGER_FUZZ_EXAMPLES=100 pytest -p no:xdist tests/api/test_schemathesis.py``)."""

from __future__ import annotations

import os

import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error, status_code_conformance
from schemathesis.generation.modes import GenerationMode
from schemathesis.schemas import APIOperation

MAX_EXAMPLES = int(os.environ.get("FLOWLEDGER_FUZZ_EXAMPLES", "15"))


def check_operation(operation: APIOperation, mode: GenerationMode, token: str) -> None:
    """Call ``operation`` with generated requests as the bearer of ``token``;
    fail on any 5xx."""

    @given(case=operation.as_strategy(generation_mode=mode))
    @settings(
        max_examples=MAX_EXAMPLES,
        derandomize=True,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    def run(case: schemathesis.Case) -> None:
        response = case.call(headers={"Authorization": f"Bearer {token}"})
        case.validate_response(response, checks=[not_a_server_error, status_code_conformance])

    run()
