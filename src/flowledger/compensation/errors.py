"""Typed errors of compensation tickets (SPEC C-9), each with a stable code;
the API maps them once by their base class (404 not found, 409 a state
that does not allow the operation, 422 bad input naming its field)."""

from __future__ import annotations

from flowledger.errors import ConflictError, FlowledgerError, InvalidStateError, NotFoundError


class TicketNotFound(NotFoundError):
    code = "compensation_not_found"


class TicketNotPending(InvalidStateError):
    """resume, resolve and terminate need a pending ticket."""

    code = "ticket_not_pending"


class InstanceSuspended(InvalidStateError):
    """A suspended instance must be resumed before a ticket resume (C-9)."""

    code = "instance_suspended"


class InstanceNotRunning(InvalidStateError):
    code = "instance_not_running"


class TicketNotResumable(InvalidStateError):
    """The ticket holds no repair task (e.g. a fallback or Saga ticket)."""

    code = "ticket_not_resumable"


class RepairTaskClosed(ConflictError):
    """The repair task is no longer pending, or its token is gone."""

    code = "repair_task_closed"


class ActionNotFailed(InvalidStateError):
    """retry needs compensationActionStatus ``failed``."""

    code = "action_not_failed"


class ActionInvalid(ConflictError):
    """The ticket has no action, or one that is no valid C-4 action."""

    code = "action_invalid"


class AttachmentTooLarge(FlowledgerError):
    code = "attachment_too_large"


class AttachmentTypeRefused(FlowledgerError):
    code = "attachment_type_not_allowed"


class NoteEmpty(FlowledgerError):
    code = "note_empty"


class AttachmentEmpty(FlowledgerError):
    code = "attachment_empty"


class NoteInvalid(FlowledgerError):
    code = "note_invalid"


class LengthRequired(FlowledgerError):
    """An upload without a Content-Length: its size must be known before it
    is read (chunked uploads are refused rather than spooled unbounded)."""

    code = "length_required"


class NoteTooLarge(FlowledgerError):
    code = "note_too_large"
