"""Recovery (SPEC O-6, O-18): the six targeted recovery actions, previewed
then run item by item, and batch recovery of stuck instances.

- :mod:`.model` — the vocabulary of targeted recovery: actions, limits, the
  filter and the plan (O-18);
- :mod:`.plan` — the read side: which items an action would touch (O-18);
- :mod:`.job_items` — the plan's items for jobs that exist (O-18);
- :mod:`.recreate_items` — the plan's ``recreate`` items (O-18);
- :mod:`.actions` — the write side: run an action, one transaction per
  item (O-18);
- :mod:`.batch_recovery` — skip and advance the stuck instances of a
  definition, with a dry run (O-6)."""
