"""Compensation tickets (SPEC C-8, C-9, A-2, A-3): list, detail, resume,
retry, note (text or an attachment) and resolve (``action: resolve`` or
``terminate``), under ``/api/workflows/compensation``.

Reading (list, detail, attachment download) needs
``workflow:instance:monitor``; handling (every POST) needs
``workflow:engine:operate`` — checked first, so nothing about a ticket is
revealed to a caller without it (403). A ticket of a tenant the caller
cannot see is 404 ``compensation_not_found``, like one that does not exist.
A state that does not allow the operation is 409 with the code of
:mod:`flowledger.compensation.operations` (``ticket_not_pending``,
``instance_suspended``, ``action_not_failed`` …). Every POST writes a
history row (with the change) and an ``operation_audit`` row (whatever the
outcome) and answers with the ticket as it is afterwards; a note answers
201 with its history row. Resume, retry and resolve are one call each of
:mod:`flowledger.compensation.ticket_actions` (which audits them); the note,
whose body is read and stored inside its audited attempt, still wraps its
call in :func:`flowledger.access.audit.audited` here.

A note is either JSON ``{"message": "..."}`` or ``multipart/form-data``
with a ``file`` part (and an optional ``message`` part): the file must fit
``settings.attachment_max_bytes`` (``attachment_too_large``) and be of an
allowed type whose content agrees (``attachment_type_not_allowed``; see
:mod:`flowledger.compensation.attachments`).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal, Self

from fastapi import APIRouter, Path, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse
from pydantic import ValidationError
from starlette.datastructures import UploadFile

from flowledger.api.audit import audited
from flowledger.api.auth import Caller, CurrentCaller
from flowledger.api.deps import ApiContext, Ctx
from flowledger.api.pagination import Cursor, Limit, cursor_for, decode_cursor
from flowledger.api.permissions import ENGINE_OPERATE, INSTANCE_MONITOR
from flowledger.api.route_access import Audit, GuardedRoute, allow
from flowledger.api.schemas import MAX_ID, ApiModel, Body, Reason, RequestModel, TaskPublic
from flowledger.compensation import attachments, operations, queries, ticket_actions
from flowledger.compensation.errors import (
    AttachmentTooLarge,
    LengthRequired,
    NoteEmpty,
    NoteInvalid,
    NoteTooLarge,
    TicketNotFound,
)
from flowledger.db.compensation_schema import ActionStatus, LogKind, TicketStatus
from flowledger.errors import NotFoundError
from flowledger.settings import Settings
from flowledger.states import InstanceStatus

router = APIRouter(prefix="/compensation", tags=["compensation"], route_class=GuardedRoute)

TicketId = Annotated[int, Path(alias="ticketId", ge=1, le=MAX_ID)]


def _operate(action: str) -> Any:
    """An operator's ticket action (``workflow:engine:operate``, audited when refused)."""
    return allow(ENGINE_OPERATE, audit=Audit(action, "compensation", "ticketId"))


LogId = Annotated[int, Path(alias="logId", ge=1, le=MAX_ID)]
MULTIPART_SLACK_BYTES = 64 * 1024  # headers and the message part around the file
MAX_MESSAGE = 10_000


# -------------------------------------------------------------------- models


class TicketReason(RequestModel):
    reason: Reason | None = None


class NoteCreate(RequestModel):
    message: Body


class TicketResolve(RequestModel):
    """``resolve`` closes the ticket only; ``terminate`` also rejects the instance."""

    action: Literal["resolve", "terminate"]
    reason: Reason | None = None


class AttachmentPublic(ApiModel):
    name: str
    content_type: str
    size_bytes: int
    url: str


class CompensationLogPublic(ApiModel):
    id: int
    kind: LogKind
    actor: str
    message: str | None = None
    detail: dict[str, Any] | None = None
    attachment: AttachmentPublic | None = None
    created_at: datetime

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Self:
        attachment = None
        if row["stored_name"] is not None:
            attachment = AttachmentPublic(
                name=row["original_name"],
                content_type=row["content_type"],
                size_bytes=row["size_bytes"],
                url=(
                    f"/api/workflows/compensation/{row['compensation_id']}/attachments/{row['id']}"
                ),
            )
        return cls(
            id=row["id"],
            kind=row["kind"],
            actor=row["actor"],
            message=row["message"],
            detail=row["detail"],
            attachment=attachment,
            created_at=row["created_at"],
        )


class ActionJobPublic(ApiModel):
    """The action's job as the ledger sees it (the authority while it waits
    for a retry or for an operator's confirmation)."""

    id: int
    status: str
    attempts: int
    max_attempts: int
    generation: int
    run_at: datetime
    last_error: str | None = None
    last_error_code: str | None = None


class CompensationPublic(ApiModel):
    id: int
    tenant: str
    instance_id: int
    failed_node_key: str
    node_key: str
    kind: str
    status: TicketStatus
    compensation_action_status: ActionStatus
    action_payload: dict[str, Any] | None = None
    error: str | None = None
    repair_task_id: int | None = None
    action_job_id: int | None = None
    created_by: str
    created_at: datetime
    updated_at: datetime
    resolved_at: datetime | None = None
    resolved_by: str | None = None

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Self:
        return cls(
            id=row["id"],
            tenant=row["tenant_id"],
            instance_id=row["instance_id"],
            failed_node_key=row["failed_node_key"],
            node_key=row["node_key"],
            kind=row["kind"],
            status=row["status"],
            compensation_action_status=row["compensation_action_status"],
            action_payload=row["action_payload"],
            error=row["error"],
            repair_task_id=row["repair_task_id"],
            action_job_id=row["action_job_id"],
            created_by=row["created_by"],
            created_at=row["created_at"],
            updated_at=row["updated_at"],
            resolved_at=row["resolved_at"],
            resolved_by=row["resolved_by"],
        )


class CompensationDetail(CompensationPublic):
    """SPEC C-9: the ticket with its error, action, the action's job, the
    repair tasks and the history timeline (oldest first)."""

    instance_status: InstanceStatus | None = None
    action_job: ActionJobPublic | None = None
    repair_tasks: list[TaskPublic]
    history: list[CompensationLogPublic]

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Self:
        base = CompensationPublic.from_row(row)
        job = row["action_job"]
        return cls(
            **dict(base),
            instance_status=row["instance_status"],
            action_job=None if job is None else ActionJobPublic(**job),
            repair_tasks=[TaskPublic.from_row(t) for t in row["repair_tasks"]],
            history=[CompensationLogPublic.from_row(r) for r in row["logs"]],
        )


class CompensationPage(ApiModel):
    items: list[CompensationPublic]
    next: str | None = None


# ------------------------------------------------------------------- helpers


async def _visible(ctx: ApiContext, caller: Caller, ticket_id: int) -> dict[str, Any]:
    return await ticket_actions.visible_ticket(ctx, caller, ticket_id)


async def _detail(ctx: ApiContext, caller: Caller, ticket_id: int) -> CompensationDetail:
    async with ctx.db.read() as conn:
        row = await queries.ticket_detail(conn, ticket_id, tenants=caller.tenant_scope)
    if row is None:  # pragma: no cover - read right after a successful operation
        raise TicketNotFound(f"compensation ticket {ticket_id} not found", field="ticketId")
    return CompensationDetail.from_row(row)


def _reason(body: TicketReason | None) -> str | None:
    return None if body is None else body.reason


# -------------------------------------------------------------------- reads


@router.get("/list", response_model=CompensationPage, dependencies=[allow(INSTANCE_MONITOR)])
async def list_tickets(
    ctx: Ctx,
    caller: CurrentCaller,
    status: Annotated[TicketStatus | None, Query(description="Ticket status.")] = None,
    instance_id: Annotated[int | None, Query(alias="instanceId", ge=1, le=MAX_ID)] = None,
    limit: Limit = 50,
    cursor: Cursor = None,
) -> CompensationPage:
    """Tickets of the caller's tenants, newest first."""
    after = decode_cursor(cursor, (int,))
    async with ctx.db.read() as conn:
        page = await queries.list_tickets(
            conn,
            tenants=caller.tenant_scope,
            status=None if status is None else status.value,
            instance_id=instance_id,
            after_id=None if after is None else after[0],
            limit=limit,
        )
    key = None if page.next_after is None else [page.next_after]
    return CompensationPage(
        items=[CompensationPublic.from_row(r) for r in page.items], next=cursor_for(key)
    )


@router.get(
    "/{ticketId}", response_model=CompensationDetail, dependencies=[allow(INSTANCE_MONITOR)]
)
async def get_ticket(ticket_id: TicketId, ctx: Ctx, caller: CurrentCaller) -> CompensationDetail:
    """One ticket: error, action, the action's job, repair tasks and history."""
    return await _detail(ctx, caller, ticket_id)


@router.get(
    "/{ticketId}/attachments/{logId}",
    response_class=FileResponse,
    # served with the stored file's own type, one of the allowed ones (issue 17)
    responses={
        200: {
            "description": "The file, with the content type it was uploaded with",
            "content": {
                media: {"schema": {"type": "string", "format": "binary"}}
                for media in attachments.ALLOWED
            },
        }
    },
    dependencies=[allow(INSTANCE_MONITOR)],
)
async def download_attachment(
    ticket_id: TicketId, log_id: LogId, ctx: Ctx, caller: CurrentCaller
) -> FileResponse:
    """The file of an attachment history row, as a download."""
    await _visible(ctx, caller, ticket_id)
    async with ctx.db.read() as conn:
        row = await queries.get_log(conn, ticket_id, log_id)
    settings = ctx.settings
    path = None
    if row is not None and row["stored_name"] is not None:
        path = attachments.path_of(settings.attachments_dir, row["stored_name"])
    if row is None or path is None:
        raise NotFoundError(f"attachment {log_id} not found", field="logId")
    return FileResponse(
        path,
        media_type=row["content_type"],
        filename=row["original_name"],
        headers={"X-Content-Type-Options": "nosniff"},
    )


# ------------------------------------------------------------------ actions


@router.post(
    "/{ticketId}/resume",
    response_model=CompensationDetail,
    dependencies=[_operate("compensation.resume")],
)
async def resume_ticket(
    ticket_id: TicketId, ctx: Ctx, caller: CurrentCaller, body: TicketReason | None = None
) -> CompensationDetail:
    """Pending ticket, running instance: finish the repair task, continue
    past the failed node, resolve the ticket."""
    reason = _reason(body)
    await ticket_actions.resume_as(ctx, caller, ctx.engine, ticket_id, reason=reason)
    return await _detail(ctx, caller, ticket_id)


@router.post(
    "/{ticketId}/retry",
    response_model=CompensationDetail,
    dependencies=[_operate("compensation.retry")],
)
async def retry_ticket(
    ticket_id: TicketId, ctx: Ctx, caller: CurrentCaller, body: TicketReason | None = None
) -> CompensationDetail:
    """A failed action with a valid config: enqueue a new compensation job."""
    reason = _reason(body)
    await ticket_actions.retry_as(ctx, caller, ctx.engine, ticket_id, reason=reason)
    return await _detail(ctx, caller, ticket_id)


# refused before the body is read: the row names the route (resolve; note)
@router.post(
    "/{ticketId}/resolve",
    response_model=CompensationDetail,
    dependencies=[_operate("compensation.resolve")],
)
async def resolve_ticket(
    ticket_id: TicketId, body: TicketResolve, ctx: Ctx, caller: CurrentCaller
) -> CompensationDetail:
    """``resolve``: pending → resolved (the ticket only). ``terminate``:
    pending → terminated; the instance is rejected, its pending tasks
    skipped and its tokens consumed."""
    await ticket_actions.close_as(
        ctx, caller, ctx.engine, ticket_id, body.action, reason=body.reason
    )
    return await _detail(ctx, caller, ticket_id)


_NOTE_BODY = {
    "required": True,
    "content": {
        "application/json": {"schema": NoteCreate.model_json_schema(by_alias=True)},
        "multipart/form-data": {
            "schema": {
                "type": "object",
                "properties": {
                    "file": {"type": "string", "format": "binary"},
                    "message": {"type": "string", "maxLength": MAX_MESSAGE},
                },
                "required": ["file"],
            }
        },
    },
}


MAX_NOTE_BODY_BYTES = 64 * 1024


def _declared_length(request: Request) -> int:
    """The Content-Length, required before a body is read (411 without it)."""
    declared = request.headers.get("content-length", "")
    if not (declared.isascii() and declared.isdigit()):
        raise LengthRequired("a note or attachment needs a Content-Length header")
    return int(declared)


async def _json_note(request: Request) -> str:
    if _declared_length(request) > MAX_NOTE_BODY_BYTES:
        raise NoteTooLarge(f"a note body is at most {MAX_NOTE_BODY_BYTES} bytes", field="message")
    try:
        return NoteCreate.model_validate_json(await request.body()).message
    except ValidationError as exc:
        errors = [{**e, "loc": ("body", *e["loc"])} for e in exc.errors()]
        raise RequestValidationError(errors) from None


async def _upload(request: Request, settings: Settings) -> tuple[str | None, operations.Attachment]:
    """Check and store the ``file`` part; returns (message, stored attachment)."""
    limit = settings.attachment_max_bytes
    if _declared_length(request) > limit + MULTIPART_SLACK_BYTES:
        raise AttachmentTooLarge(
            f"the attachment is larger than the limit of {limit} bytes",
            field="file",
            maxBytes=limit,
        )
    async with request.form(max_files=1, max_fields=4, max_part_size=64 * 1024) as form:
        upload = form.get("file")
        text = form.get("message")
        message = (text.strip() or None) if isinstance(text, str) else None
        if message is not None and (len(message) > MAX_MESSAGE or "\x00" in message):
            raise NoteInvalid(f"message: at most {MAX_MESSAGE} characters, no NUL", field="message")
        if not isinstance(upload, UploadFile):
            raise NoteEmpty("a multipart note needs a file part named 'file'", field="file")
        data = await upload.read(limit + 1)
        content_type = attachments.check_attachment(upload.content_type, data, max_bytes=limit)
        stored = await attachments.store(settings.attachments_dir, data, content_type)
        return message, operations.Attachment(
            stored_name=stored,
            original_name=attachments.clean_name(upload.filename),
            content_type=content_type,
            size_bytes=len(data),
        )


@router.post(
    "/{ticketId}/note",
    status_code=201,
    response_model=CompensationLogPublic,
    openapi_extra={"requestBody": _NOTE_BODY},
    dependencies=[_operate("compensation.note")],
)
async def add_note(
    ticket_id: TicketId, request: Request, ctx: Ctx, caller: CurrentCaller
) -> CompensationLogPublic:
    """A note (JSON ``{"message"}``) or an attachment (multipart ``file`` and
    optional ``message``), on a ticket in any status."""
    multipart = request.headers.get("content-type", "").startswith("multipart/form-data")
    action = "compensation.attachment" if multipart else "compensation.note"
    async with audited(ctx, caller, action, "compensation", ticket_id) as entry:
        ticket = await _visible(ctx, caller, ticket_id)
        entry.tenant_id = ticket["tenant_id"]
        attachment = None
        message = None if multipart else await _json_note(request)
        if multipart:
            message, attachment = await _upload(request, ctx.settings)
            entry.detail.update(
                file=attachment.original_name,
                contentType=attachment.content_type,
                sizeBytes=attachment.size_bytes,
            )
        try:
            log_id = await operations.add_note(
                ctx.engine,
                ticket_id,
                actor=caller.user_id,
                message=message,
                attachment=attachment,
                audit=entry,
            )
        except BaseException:
            if attachment is not None:
                attachments.remove(ctx.settings.attachments_dir, attachment.stored_name)
            raise
    async with ctx.db.read() as conn:
        row = await queries.get_log(conn, ticket_id, log_id)
    assert row is not None
    return CompensationLogPublic.from_row(row)
