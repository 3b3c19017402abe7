"""The ``flowledger`` command's entry point (``python -m flowledger`` and the
console script): imports the CLI with the cyclic garbage collector paused,
then freezes what the imports made.

Importing the CLI allocates a few hundred thousand long-lived objects
(modules, classes, SQLAlchemy tables and statements, pydantic models); with
the collector on, those allocations trigger collections that walk them again
and again, about a tenth of a worker's start-up (issue 15: the ledger's peer
protocol times the worker's start-up). ``gc.freeze()`` then moves them to a
permanent generation, so the collections a running worker makes do not walk
them either. Nothing is leaked: the collector is back on before any command
runs, and import-time objects live as long as the process anyway.
"""

from __future__ import annotations

import gc


def main() -> None:
    """Run the ``flowledger`` command."""
    gc.disable()
    try:
        from flowledger.cli.main import main as cli_main
    finally:
        gc.freeze()
        gc.enable()
    cli_main()
