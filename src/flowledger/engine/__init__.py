"""The process engine (SPEC E-1 … E-11): definitions and their versions,
instances with frozen snapshots, tokens, gateways, tasks and the lifecycle.
Every change runs as one transaction that locks the instance row first
("run to the next wait state") and asks the ledger for each asynchronous
step in that same transaction. It never imports the API, the CLI or the
worker."""

from flowledger.engine.facade import Engine

__all__ = ["Engine"]
