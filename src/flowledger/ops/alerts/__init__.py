"""Alerting and metrics (SPEC O-22): named metric providers, rules,
silences, the evaluator and its notifications, and the same metrics for
Prometheus. Read-only queries (:mod:`.metrics`, :mod:`.queries`, and
:mod:`.figures`, the job and attempt figures of every scope of an
evaluation read at once) are kept apart from the writes (:mod:`.rules`,
:mod:`.silences`, :mod:`.evaluator`);
:mod:`.changes` is the operator's audited changes of rules and silences,
each in one transaction with its audit row; :mod:`.notices` words the
notifications, :mod:`.service` is the evaluator's
leader-gated service and :mod:`.prometheus` the ``GET /metrics``
exposition."""
