"""Alerting (SPEC O-22): named metric providers, rules, silences, the
evaluator and its notifications. Read-only queries (:mod:`.metrics`,
:mod:`.queries`) are kept apart from the writes (:mod:`.rules`,
:mod:`.silences`, :mod:`.evaluator`)."""
