"""Rendering the requests of the outbound nodes (SPEC X-1, X-2, X-4): the
trigger's call and the external approval's dispatch, rendered from the
instance when the node is entered and stored in the job's payload, and the
trigger's attempt budget.

Template values: ``instanceId``, ``taskId``, ``nodeKey``, ``definitionKey``,
``initiator``, ``traceId`` and ``form.*``. URL placeholders are
percent-encoded and an absolute URL never takes its origin from data
(:func:`~flowledger.outbound.ssrf.build_url`); values in a JSON body are
JSON-escaped. A header whose name is not an HTTP token or whose rendered
value holds a control character (CR, LF, NUL … would inject headers) is
refused with :class:`HeaderInvalid`; rendered values lose surrounding blanks.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from flowledger.definitions.model import HttpCall, Node
from flowledger.definitions.templates import looks_like_json, render
from flowledger.engine.node_failures import effective_action
from flowledger.engine.step import Step
from flowledger.outbound.ssrf import build_url

CALLBACK_PATH = "/api/workflows/callbacks/external/{task_id}"
DEFAULT_TRIGGER_RETRIES = 3
DECISIONS = ("approve", "reject")
_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")  # an HTTP field name (RFC 9110 5.1)
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")  # CTLs but HTAB


class HeaderInvalid(ValueError):
    """A header of a call that cannot be sent as rendered (X-4)."""


def template_values(step: Step, node: Node, task_id: int) -> dict[str, Any]:
    return {
        "instanceId": step.instance_id,
        "taskId": task_id,
        "nodeKey": node.key,
        "definitionKey": step.instance["definition_key"],
        "initiator": step.instance["initiator"],
        "traceId": step.trace_id,
        "form": step.form,
    }


def _has_header(headers: dict[str, str], name: str) -> bool:
    return any(key.lower() == name.lower() for key in headers)


def json_or_none(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


def body_content_type(body: str) -> str:
    """The Content-Type a rendered text body is sent with when no header sets one."""
    return "application/json" if json_or_none(body) is not None else "text/plain; charset=utf-8"


def render_headers(templates: Mapping[str, str], values: Mapping[str, Any]) -> dict[str, str]:
    """The headers rendered from ``values``. Raises :class:`HeaderInvalid` for
    a name that is not an HTTP token or a value with a control character."""
    headers: dict[str, str] = {}
    for name, template in templates.items():
        if not _TOKEN.fullmatch(name):
            raise HeaderInvalid(f"header name {name!r} is not a valid HTTP field name")
        value = render(template, values).strip(" \t")
        if _CONTROL.search(value):
            raise HeaderInvalid(
                f"header {name!r} renders to a value with a control character "
                "(CR, LF, NUL …); it is not sent"
            )
        headers[name] = value
    return headers


def render_call(call: HttpCall, values: dict[str, Any]) -> dict[str, Any]:
    """The request of ``call`` rendered from ``values`` (stored in the job's
    payload). Raises OutboundRefused for a URL that cannot be valid and
    HeaderInvalid for a header that cannot be sent."""
    if call.kind == "http":
        url = build_url(call.url, values)
    else:  # a connector path, relative to the connector's base URL
        url = render(call.url, values, url_encode=True)
    headers = render_headers(call.headers, values)
    body = None
    if call.body_template is not None:  # values JSON-escaped inside a JSON document
        body = render(call.body_template, values, json_escape=looks_like_json(call.body_template))
    json_body = body is not None and json_or_none(body) is not None
    if json_body and not _has_header(headers, "Content-Type"):
        headers["Content-Type"] = "application/json"
    return {
        "kind": call.kind,
        "method": call.http_method,
        "url": url,
        "headers": headers,
        "body": body,
        "idempotent": call.idempotent,
        "connectorId": call.connector_id,
        "mode": call.mode,
        "resultMapping": dict(call.result_mapping),
    }


def render_dispatch(step: Step, node: Node, task_id: int) -> dict[str, Any]:
    """The ``external_dispatch`` request for the task (body: a JSON object)."""
    assert node.dispatch is not None
    request = render_call(node.dispatch, template_values(step, node, task_id))
    body: dict[str, Any] = {}
    if request["body"] is not None:
        extra = json_or_none(request["body"])
        if isinstance(extra, dict):
            body.update(extra)
        else:
            body["data"] = request["body"] if extra is None else extra
    body.update(
        taskId=task_id,
        instanceId=step.instance_id,
        nodeKey=node.key,
        definitionKey=step.instance["definition_key"],
        callbackPath=CALLBACK_PATH.format(task_id=task_id),
        decisions=list(DECISIONS),
    )
    request["body"] = body
    request["headers"] = {
        k: v for k, v in request["headers"].items() if k.lower() != "content-type"
    } | {"Content-Type": "application/json"}
    return request


def trigger_max_attempts(node: Node) -> int:
    retries = node.max_retries
    if retries is None:
        retries = 0 if effective_action(node) == "continue" else DEFAULT_TRIGGER_RETRIES
    return retries + 1
