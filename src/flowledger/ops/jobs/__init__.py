"""The job ledger as operators see and act on it (SPEC L-24, L-25): the job
list, chains and failure clusters; retry, skip, batch actions and
conditional replay.

- :mod:`.filters` — the one :class:`~.filters.JobFilter` of the list,
  clusters, batch actions and replay (L-24, L-25);
- :mod:`.queries` — the job list, counts, one job and a traceId's chain
  (L-25);
- :mod:`.failure_clusters` — dead and failed jobs grouped by error reason,
  type, instance or traceId (L-24);
- :mod:`.actions` — retry and skip one job, batch retry and skip (L-24);
- :mod:`.replay` — conditional replay with its preview and progress
  (L-24);
- :mod:`.operator_actions` — those actions as the operator runs them, each
  audited (L-24);
- :mod:`.pauses` — pause and resume a pool or a job type, audited
  (L-24, issue 31 item 3);
- :mod:`.batching` — staggering, chunks, locks and batch ids shared by the
  batch actions and replay (L-24)."""
