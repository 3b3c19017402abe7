"""Read models and operator actions of SPEC O- and L-23 … L-25: job queries,
runtime status, failure clusters, retry / skip / replay. Read-only queries
live apart from actions. It imports the ledger and the engine, never the API
or the CLI."""
