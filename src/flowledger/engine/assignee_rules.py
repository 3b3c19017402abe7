"""A human node's assignee rule evaluated (SPEC E-5): users, then the users
holding one of the roles in the instance's tenant, then the expression over
the form — in a stable order, deduplicated. Pure: the users' rows are the
caller's (:func:`flowledger.engine.tasks.resolve_assignees` reads them in a
step; an instance migration's dry run reads them once for every instance)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from flowledger.definitions.expressions import evaluate_value
from flowledger.definitions.model import Assignees


def pick_assignees(
    assignees: Assignees | None,
    users: Iterable[Any],
    *,
    tenant: str,
    form: dict[str, Any],
    initiator: str,
) -> list[str]:
    """The users ``assignees`` names for an instance of ``tenant`` with
    ``form``; ``users`` rows carry ``id``, ``roles`` and ``tenants``, ordered
    by id (read only when the rule names roles). An expression error
    propagates (:class:`~flowledger.definitions.expressions.ExpressionError`)."""
    if assignees is None:
        return []
    found: list[str] = list(assignees.users)
    if assignees.roles:
        for row in users:
            in_tenant = "*" in (row.tenants or []) or tenant in (row.tenants or [])
            if in_tenant and set(row.roles or []) & set(assignees.roles):
                found.append(row.id)
    if assignees.expr:
        value = evaluate_value(assignees.expr, form, {"initiator": initiator})
        if isinstance(value, str) and value:
            found.append(value)
        elif isinstance(value, list):
            found.extend(str(v) for v in value if v)
    return list(dict.fromkeys(found))
