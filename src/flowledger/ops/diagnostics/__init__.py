"""The diagnostics of one instance (SPEC O-3, O-7, O-10, O-12): the drawer's
document with every view, the consistency conclusions and verdict, and the
diagnostic bundle an operator attaches to a ticket. Read-only; secrets
redacted.

- :mod:`.instance` — the diagnostics document: every view in one read
  transaction, or one view alone (O-3, O-10, O-12);
- :mod:`.trace` — the engine-trace view and the traceId's job chain (O-10);
- :mod:`.nodes` — the node and diagram views (O-10);
- :mod:`.tasks` — the task, form and definition views (O-10);
- :mod:`.tokens` — the token view with open joins (O-10);
- :mod:`.jobs` — the trigger and event-dispatch views (O-10);
- :mod:`.consistency` — the conclusions and verdict of one instance (O-12);
- :mod:`.consistency_checks` — the O-12 checks the health inspection does
  not name (O-12);
- :mod:`.consistency_messages` — the English texts of conclusions and
  verdicts (O-10, O-12);
- :mod:`.bundle` — the diagnostic bundle of an instance (O-7) and of a job
  chain (L-25);
- :mod:`.redaction` — secrets masked in what the diagnostics show (O-7,
  O-10)."""
