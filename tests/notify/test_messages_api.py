"""The "my messages" API (SPEC X-7): 401 without a token, only the caller's
own messages listed (paged, unread filter), marking read, and another
user's message is 404."""

from __future__ import annotations

from flowledger.api.permissions import TASK_ACT
from flowledger.notify.messages import post_message
from tests.api.conftest import Api


async def _post(api: Api, recipient: str, title: str, tenant: str = "default") -> int:
    async with api.db.begin() as conn:
        return await post_message(
            conn,
            tenant=tenant,
            recipient=recipient,
            title=title,
            body="b",
            kind="task",
            link="/tasks/1",
            now=api.clock.now(),
        )


async def test_requires_token(api: Api) -> None:
    assert (await api.client.get("/api/workflows/messages")).status_code == 401
    response = await api.client.post("/api/workflows/messages/1/read")
    assert response.status_code == 401
    assert response.json()["code"] == "unauthenticated"


async def test_lists_only_own_messages_and_marks_read(api: Api) -> None:
    mia = await api.token("mia", TASK_ACT)
    max_ = await api.token("max")
    ids = [await _post(api, "mia", f"m{n}") for n in range(3)]
    theirs = await _post(api, "max", "not for mia")
    await _post(api, "mia", "other tenant", tenant="acme")

    first = (await api.get("/messages", mia, limit=2)).json()
    assert [m["id"] for m in first["items"]] == [ids[2], ids[1]]
    assert first["items"][0]["title"] == "m2" and first["items"][0]["read"] is False
    assert first["items"][0]["link"] == "/tasks/1"
    rest = (await api.get("/messages", mia, limit=2, cursor=first["next"])).json()
    assert [m["id"] for m in rest["items"]] == [ids[0]] and rest["next"] is None

    response = await api.post(f"/messages/{ids[1]}/read", mia)
    assert response.status_code == 200, response.text
    assert response.json()["read"] is True and response.json()["readAt"] is not None
    unread = (await api.get("/messages", mia, unread="true")).json()
    assert [m["id"] for m in unread["items"]] == [ids[2], ids[0]]

    response = await api.post(f"/messages/{theirs}/read", mia)
    assert response.status_code == 404
    assert response.json()["code"] == "message_not_found"
    assert [m["id"] for m in (await api.get("/messages", max_)).json()["items"]] == [theirs]
    assert (await api.post("/messages/999999/read", mia)).status_code == 404
    assert (await api.get("/messages", mia, cursor="!!")).status_code == 422
