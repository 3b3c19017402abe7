"""Data retention (SPEC O-20): the policies, what each removes, and the
runs and previews over them.

- :mod:`.policies` — the policies, their defaults and operator overrides;
- :mod:`.purge` — what each policy removes, as steps that count (the
  preview) and remove one bounded batch (the run);
- :mod:`.runs` — a retention run under its lease, and its preview;
- :mod:`.changes` — the operator's audited actions: changing policies and a
  run now."""
