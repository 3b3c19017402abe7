"""Typed errors of the engine (mapped to HTTP once, in the API layer)."""

from __future__ import annotations

from flowledger.errors import ConflictError, FlowledgerError, InvalidStateError, NotFoundError


class EngineError(FlowledgerError):
    code = "engine_error"


class FormInvalidError(FlowledgerError):
    """SPEC E-7: form data does not match the definition's form schema."""

    code = "form_invalid"


class InstanceNotFound(NotFoundError):
    code = "instance_not_found"


class TaskNotFound(NotFoundError):
    code = "task_not_found"


class DefinitionNotFound(NotFoundError):
    code = "definition_not_found"


class InstanceStateError(InvalidStateError):
    code = "instance_state"


class TaskStateError(InvalidStateError):
    code = "task_state"


class TaskWithoutToken(ConflictError):
    """SPEC E-4: a task can only be submitted while its node holds an active token."""

    code = "task_without_token"


class NotAssignee(FlowledgerError):
    code = "not_assignee"
