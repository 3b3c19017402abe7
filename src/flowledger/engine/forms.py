"""Form data (SPEC E-7): validation against the definition's form schema on
start and on every write, and the write history (who or what wrote which
fields; buffered with the step's other rows, see
:mod:`~flowledger.engine.write_buffer`)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date
from types import MappingProxyType
from typing import Any

from flowledger.definitions.model import FormField, FormSchema
from flowledger.engine.errors import FormInvalidError
from flowledger.engine.step import Step
from flowledger.engine.write_buffer import add_form_write

_TYPES: Mapping[str, tuple[type, ...]] = MappingProxyType(
    {
        "string": (str,),
        "number": (int, float),
        "integer": (int,),
        "boolean": (bool,),
        "object": (dict,),
        "array": (list,),
    }
)


def _check_field(spec: FormField, value: Any) -> str | None:
    if value is None:
        return None
    if spec.type == "date":
        if not isinstance(value, str):
            return "must be an ISO date string"
        try:
            date.fromisoformat(value[:10])
        except ValueError:
            return "must be an ISO date (YYYY-MM-DD)"
        return None
    expected = _TYPES[spec.type]
    if isinstance(value, bool) and spec.type in ("number", "integer"):
        return f"must be a {spec.type}"
    if not isinstance(value, expected):
        return f"must be a{'n' if spec.type[0] in 'aeiou' else ''} {spec.type}"
    if spec.enum is not None and value not in spec.enum:
        return f"must be one of {spec.enum}"
    return None


def _has_nul(value: Any) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(_has_nul(k) or _has_nul(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_nul(v) for v in value)
    return False


def validate_form(schema: FormSchema, data: Any, *, partial: bool = False) -> dict[str, Any]:
    """Check ``data`` against ``schema``; raise FormInvalidError naming the field."""
    if not isinstance(data, dict):
        raise FormInvalidError("form data must be a JSON object", field="form")
    for key, value in data.items():
        if _has_nul(key) or _has_nul(value):  # no database stores NUL in text
            raise FormInvalidError(f"form.{key}: contains a NUL character", field=f"form.{key}")
    fields = {f.key: f for f in schema.fields}
    for key in data:
        if key not in fields:
            raise FormInvalidError(f"form.{key}: unknown field", field=f"form.{key}")
    for spec in schema.fields:
        value = data.get(spec.key)
        if value is None and spec.required and not partial:
            raise FormInvalidError(f"form.{spec.key}: required", field=f"form.{spec.key}")
        problem = _check_field(spec, value)
        if problem:
            raise FormInvalidError(f"form.{spec.key}: {problem}", field=f"form.{spec.key}")
    return dict(data)


async def write_form(step: Step, changes: dict[str, Any], *, source: str) -> None:
    """Merge ``changes`` into the instance's form data, validated, with history."""
    if not changes:
        return
    merged = {**step.form, **changes}
    validate_form(step.defn.form, merged)
    await step.set_instance(form_data=merged)
    await add_form_write(
        step.conn,
        {
            "instance_id": step.instance_id,
            "written_by": step.actor,
            "source": source,
            "changes": changes,
            "created_at": step.now,
        },
    )
    await step.trace("form_written", detail={"fields": sorted(changes), "source": source})
