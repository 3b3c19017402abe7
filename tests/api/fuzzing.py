"""Schemathesis helpers shared by the API fuzz tests (SPEC A-4: no input
makes the API answer 5xx)."""

from __future__ import annotations

import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error
from schemathesis.generation.modes import GenerationMode
from schemathesis.schemas import APIOperation

MAX_EXAMPLES = 15


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
        case.validate_response(response, checks=[not_a_server_error])

    run()
