"""The read side of deadlines (issue 31 item 4), both backends: a task
carries ``dueAt``, ``dueSoon``, ``overdue``, ``escalatedAt``; the instances
list filters by ``deadline=due_soon|overdue|escalated`` and each row names
its deadline states; the analytics timeouts panel counts due soon, overdue
and escalated tasks; an unknown filter value is 422 naming the parameter."""

from __future__ import annotations

import copy
from typing import Any

from sqlalchemy import update

from flowledger.db.engine_schema import users
from tests.api.conftest import Api, People, approval
from tests.integration.engine_helpers import run_due_jobs

HOUR = 3600


def _deadline(key: str, due: str) -> dict[str, Any]:
    defn = copy.deepcopy(approval(key))
    defn["nodes"][1]["deadline"] = {
        "due": due,
        "escalation": [{"after": "PT1H", "action": "transfer", "to": "manager"}],
    }
    return defn


async def _ids(api: Api, people: People, **params: Any) -> list[int]:
    response = await api.get("/instances", people.root, **params)
    assert response.status_code == 200, response.text
    return sorted(item["id"] for item in response.json()["items"])


async def test_flags_filter_and_escalation(api: Api, people: People) -> None:
    async with api.db.begin() as conn:
        await conn.execute(update(users).where(users.c.id == "mia").values(manager_id="max"))
    await api.deploy(people.root, _deadline("soon", "PT3H"))
    await api.deploy(people.root, _deadline("late", "PT10H"))
    await api.deploy(people.root, approval("none"))
    soon = (await api.start(people.ann, "soon"))["id"]
    late = (await api.start(people.ann, "late"))["id"]
    plain = (await api.start(people.ann, "none"))["id"]

    tasks = {t["instanceId"]: t for t in await api.my_tasks(people.mia)}
    assert tasks[soon]["dueSoon"] and not tasks[soon]["overdue"]
    assert not tasks[late]["dueSoon"] and not tasks[late]["overdue"]
    assert tasks[plain]["dueAt"] is None and not tasks[plain]["dueSoon"]
    assert tasks[soon]["escalatedAt"] is None
    assert await _ids(api, people, deadline="due_soon") == [soon]
    assert await _ids(api, people, deadline="overdue") == []

    api.clock.advance(seconds=3 * HOUR)  # soon is due: overdue; nothing escalated yet
    await run_due_jobs(api.db, api.clock)
    assert await _ids(api, people, deadline="overdue") == [soon]
    assert await _ids(api, people, deadline="escalated") == []
    [task] = [t for t in await api.my_tasks(people.mia) if t["instanceId"] == soon]
    assert (task["overdue"], task["dueSoon"], task["escalationStep"]) == (True, False, 0)

    api.clock.advance(seconds=HOUR)  # the chain transfers soon's task to mia's manager
    await run_due_jobs(api.db, api.clock)
    assert soon not in [t["instanceId"] for t in await api.my_tasks(people.mia)]
    [task] = [t for t in await api.my_tasks(people.max) if t["instanceId"] == soon]
    assert task["escalatedAt"] is not None and task["overdue"]
    assert await _ids(api, people, deadline="escalated") == [soon]
    rows = {
        r["id"]: r["deadline"] for r in (await api.get("/instances", people.root)).json()["items"]
    }
    assert rows == {soon: ["overdue", "escalated"], late: [], plain: []}
    detail = (await api.get(f"/instances/{soon}", people.root)).json()
    assert detail["deadline"] == ["overdue", "escalated"]
    timeouts = (await api.get("/analytics/timeouts", people.mon)).json()
    assert (timeouts["overdue"], timeouts["escalated"], timeouts["dueSoon"]) == (1, 1, 0)
    [overdue] = timeouts["overdueTasks"]
    assert overdue["instanceId"] == soon and overdue["escalatedAt"] is not None

    api.clock.advance(seconds=3 * HOUR)  # late is due within 4 h now
    assert await _ids(api, people, deadline="due_soon") == [late]
    timeouts = (await api.get("/analytics/timeouts", people.mon)).json()
    assert (timeouts["dueSoon"], timeouts["dueWithin24h"]) == (1, 1)


async def test_an_unknown_deadline_filter_is_422(api: Api, people: People) -> None:
    response = await api.get("/instances", people.root, deadline="someday")
    assert response.status_code == 422, response.text
    assert "deadline" in response.text
