"""The health inspection (SPEC O-16, with the O-12 rules it shares with an
instance's consistency verdict): engine-wide checks, one set-based query per
rule, their messages, the health score and its history.

- :mod:`.query` — the parts every health-check builder is made of;
- :mod:`.rule_queries` — one query builder per rule (O-16, O-12);
- :mod:`.rules` — the registry of the rules (:data:`~.rules.RULES`);
- :mod:`.inspection` — the inspection over the caller's tenants (O-16);
- :mod:`.counts` — the inspection's counts without its rows (O-16, O-22);
- :mod:`.page` — one page of the inspection and its counts, by one
  statement (O-16);
- :mod:`.saturation` — whether the score's inspection deductions are at
  their caps, without counting (O-16, O-22);
- :mod:`.messages` — what an operator reads for each problem and its repair
  (O-16, O-18);
- :mod:`.score` — the 0-100 engine health score (O-16, L-23);
- :mod:`.history` — the score's snapshots and series (O-16)."""
