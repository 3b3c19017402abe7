"""Checking ``workflow:engine:operate`` before a request body is read (SPEC
A-2: permissions before validation where possible), as a route dependency
that still audits the refusal like any refused mutation: one
``operation_audit`` row with result ``failed`` and ``detail.code =
forbidden``, the target id taken from the path."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from fastapi import Request

from flowledger.api.audit import AuditEntry, write_audit
from flowledger.api.auth import Caller, CurrentCaller
from flowledger.api.deps import get_context
from flowledger.api.permissions import ENGINE_OPERATE, require


def operator(
    action: str, target_type: str, path_param: str
) -> Callable[[Request, Caller], Awaitable[Caller]]:
    """A dependency answering the caller once it holds ``workflow:engine:operate``."""

    async def dependency(request: Request, caller: CurrentCaller) -> Caller:
        if not caller.has(ENGINE_OPERATE):
            entry = AuditEntry(
                actor=caller.user_id,
                action=action,
                target_type=target_type,
                target_id=str(request.path_params.get(path_param)),
                detail={"code": "forbidden"},
            )
            await write_audit(get_context(request), entry, "failed")
            require(caller, ENGINE_OPERATE)
        return caller

    return dependency
