"""``flowledger batches list|show``: the recorded batch operations (issue 29
item 4; ``GET /engine/batches`` and ``GET /engine/batches/{batchId}``) from
a terminal — what an operator reads after a batch recovery, retry, replay,
scope suspend or migration started elsewhere. ``list`` prints the newest
first with their counts; ``show`` one batch with its progress and every
item's outcome (``done | skipped(reason) | failed(error)``). ``--json``
prints the REST document instead. Every tenant. Exit code 2 when ``show``
does not find the batch (``not_found``) or on bad input. No logic lives here: it calls
:mod:`flowledger.ops.batch`.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.table import Table

from flowledger.cli import jobs_support as js
from flowledger.cli.common import out
from flowledger.engine import Engine
from flowledger.errors import NotFoundError
from flowledger.ops import batch

batches_app = typer.Typer(no_args_is_help=True, help="Recorded batch operations.")


def _when(value: object) -> str:
    return "—" if value is None else js.text(value)[:19].replace("T", " ")


_COUNTS = ("total", "done", "skipped", "failed")


def _counts(doc: dict[str, Any]) -> str:
    return " · ".join(f"{k} {doc['counts'][k]}" for k in _COUNTS)


@batches_app.command("list")
def list_command(
    kind: Annotated[str | None, typer.Option(help="Only batches of this kind.")] = None,
    limit: Annotated[int, typer.Option(min=1, max=200, help="Rows shown.")] = 50,
    as_json: js.JsonOpt = False,
) -> None:
    """The batch operations, newest first, with their counts."""

    async def main(engine: Engine) -> None:
        items, _ = await batch.list_batches(engine.db, kind=kind, limit=limit)
        if as_json:
            js.print_json({"items": items})
            return
        table = Table("kind", "state", "actor", "started", *_COUNTS)
        table.add_column("id", no_wrap=True)  # what `batches show` takes
        for doc in items:
            counts = doc["counts"]
            table.add_row(
                doc["kind"],
                doc["state"],
                doc["actor"],
                _when(doc["startedAt"]),
                *(str(counts[k]) for k in _COUNTS),
                doc["id"],
            )
        out.print(table if items else "no batch operations")

    js.run_command(as_json, main)


@batches_app.command("show")
def show_command(
    batch_id: Annotated[str, typer.Argument(help="The batch's id.")],
    as_json: js.JsonOpt = False,
) -> None:
    """One batch: state, counts, progress and every item's outcome."""

    async def main(engine: Engine) -> None:
        doc = await batch.describe(engine.db, batch_id)
        if doc is None:
            raise NotFoundError(f"batch {batch_id} not found", field="batchId")
        if as_json:
            js.print_json(doc)
            return
        out.print(
            f"{doc['id']} · {doc['kind']} · {doc['state']}"
            + (" · dry run" if doc["dryRun"] else "")
            + f" · by {doc['actor']} · {_counts(doc)}"
        )
        if doc["reason"]:
            out.print(f"reason: {doc['reason']}")
        if doc["error"]:
            out.print(f"[red]error: {doc['error']}[/red]")
        table = Table("item", "result", "detail")
        for result in doc["results"]:
            error = result.get("error") or {}
            detail = result.get("reason") or error.get("message") or ""
            table.add_row(js.text(result.get("key")), str(result.get("result")), js.text(detail))
        out.print(table)

    js.run_command(as_json, main)
