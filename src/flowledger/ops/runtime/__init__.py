"""The runtime of the engine as operators watch it (SPEC L-23, O-18): the
ledger's execution pools and the nodes serving them, at one database time.
Read-only.

- :mod:`.status` — the runtime status panel: live workers, queue depths,
  rates and latencies (L-23; the figures the metrics reuse, O-22);
- :mod:`.worker_nodes` — the live worker nodes behind the panel's
  ``liveWorkers`` figure (L-23);
- :mod:`.engine_diagnostics` — the engine diagnostics page: nodes, leader
  leases, the drain, the outbox, settings, queues and paused scopes
  (O-18)."""
