"""Issue 17 item 10 (SPEC A-2), the task actions: their per-object check sits
in a helper (``_act`` of ``api/routers/tasks.py``), and their permission is
declared on each route (issue 29 item 1): a caller without the permission
gets 403 even when the body is invalid — for approve, reject, handle,
transfer, comment, reassign and remind. A caller who holds it gets
the 422 of the same body (so the body really is invalid), and nothing
changes. Both backends."""

from __future__ import annotations

from typing import Any

import pytest

from flowledger.db.engine_schema import workflow_tasks
from tests.api.conftest import Api, People, approval
from tests.hardening.edge import assert_no_traceback, assert_refused, post_raw

# action -> (an invalid body, who holds the permission)
ACTIONS: dict[str, tuple[dict[str, Any], str]] = {
    "approve": ({"comment": ["x"]}, "mia"),
    "reject": ({"comment": {"a": 1}}, "mia"),
    "handle": ({"form": "not an object"}, "mia"),
    "transfer": ({"to": ["ops"]}, "mia"),
    "comment": ({"body": 5}, "mia"),
    "reassign": ({"to": "ops", "reason": ["r"]}, "ops"),
    "remind": ({"note": ["n"]}, "ops"),
}


@pytest.fixture(autouse=True)
def _log(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level("INFO")


@pytest.mark.parametrize("action", list(ACTIONS))
async def test_task_action_answers_403_before_422_item10(
    api: Api, people: People, caplog: pytest.LogCaptureFixture, action: str
) -> None:
    await api.deploy(people.root, approval())
    await api.start(people.ann)
    (task,) = await api.my_tasks(people.mia)
    path = f"/tasks/{task['id']}/{action}"
    body, holder = ACTIONS[action]
    nobody = await api.token("nobody")
    before = await api.rows(workflow_tasks)

    assert_refused(await api.post(path, nobody, body), 403, "forbidden", None)
    # an unknown field and malformed JSON: 403 as well
    assert_refused(await api.post(path, nobody, {**body, "bogus": 1}), 403, "forbidden", None)
    assert_refused(await post_raw(api.client, path, '{"comment":', nobody), 403, "forbidden", None)

    response = await api.post(path, getattr(people, holder), body)
    assert response.status_code == 422, response.text
    assert response.json()["field"], response.text
    assert await api.rows(workflow_tasks) == before
    assert_no_traceback(caplog)
