"""The names a deploy checks placeholders against (SPEC E-1) are the names
the renderers fill: a node's call or dispatch
(``engine.outbound_requests.template_values``) and a compensation or
fallback action (``compensation.runners.template_values``). A name added to
a renderer and not to ``definitions.templates`` would be refused at deploy;
one removed would deploy and render empty — this test fails on either."""

from __future__ import annotations

from types import SimpleNamespace

from flowledger.compensation.runners import template_values as action_values
from flowledger.definitions.templates import ACTION_VALUES, CALL_VALUES
from flowledger.engine.outbound_requests import template_values as call_values


def test_call_placeholders_are_the_values_a_call_is_rendered_with_E1() -> None:
    # the renderer reads only these attributes of the step and the node
    step = SimpleNamespace(
        instance_id=7,
        instance={"definition_key": "p", "initiator": "carol"},
        trace_id="t",
        form={"amount": 1},
    )
    values = call_values(step, SimpleNamespace(key="big"), 3)  # type: ignore[arg-type]
    assert set(values) == set(CALL_VALUES)


def test_action_placeholders_are_the_values_an_action_is_rendered_with_E1() -> None:
    assert set(action_values({"amount": 1}, 7, "big", "boom")) == set(ACTION_VALUES)
