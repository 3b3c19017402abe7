"""docs/webhooks.md tells a receiver how to verify a delivery (SPEC X-5); its
Python example, run here as written, accepts every real delivery to a
receiver on 127.0.0.1 and refuses a changed body, a wrong secret and an old
timestamp."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import httpx
import pytest

from flowledger.clock import ManualClock
from flowledger.db.database import Database
from flowledger.settings import Settings
from tests.events import webhook_support as support
from tests.events.webhook_support import deployed_engine, dispatch_all, subscribe
from tests.outbound.receivers import Receiver

secret_key = support.secret_key
receiver = support.outbound.receiver
other_receiver = support.outbound.other_receiver
outbound_env = support.outbound.outbound_env

DOC = Path(__file__).resolve().parents[2] / "docs" / "webhooks.md"


def documented_verifier() -> Any:
    (first, *_) = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.DOTALL)
    namespace: dict[str, Any] = {}
    exec(compile(first, str(DOC), "exec"), namespace)
    return namespace["verify_delivery"]


async def test_the_documented_receiver_code_verifies_real_deliveries_X5(
    db: Database,
    clock: ManualClock,
    secret_key: str,
    receiver: Receiver,
    outbound_env: Settings,
) -> None:
    verify_delivery = documented_verifier()
    engine = await deployed_engine(db, clock)
    _, secret = await subscribe(db, clock, receiver.url)
    await engine.start("leave", form={}, initiator="ann")
    await dispatch_all(db, clock)
    assert len(receiver.requests) >= 2

    now = clock.now().timestamp()
    for request in receiver.requests:
        headers = httpx.Headers(request.headers)
        event = verify_delivery(secret, headers, request.body, now=now)
        assert event["type"] == headers["x-flowledger-event"]
        with pytest.raises(ValueError, match="signature mismatch"):
            verify_delivery(secret, headers, request.body + b" ", now=now)
        with pytest.raises(ValueError, match="signature mismatch"):
            verify_delivery("another-secret", headers, request.body, now=now)
        with pytest.raises(ValueError, match="tolerance"):
            verify_delivery(secret, headers, request.body, now=now + 301)
