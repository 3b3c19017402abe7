"""A step's statements run by their generic plans on PostgreSQL (issue 28,
issue 34 item 4): :data:`STEP_GENERIC_PLANS`, a condition of the step's
first statement — its instance lock (``reserving`` the step's ids) or a job
step's fenced lock — that sets ``plan_cache_mode = force_generic_plan`` for
the rest of the step's transaction (``set_config(…, true)``: local to it;
the setting in force when a later statement is bound decides its plan).

Why: the step's write statements are fixed shapes, prepared by psycopg
after a few uses; left to choose (``plan_cache_mode = auto``), PostgreSQL
planned the ones that settle an attempt anew at every execution, because
their generic plan spans every day partition of the attempts history (the
custom plan prunes to one) and so looked dearer — about 0.55 ms of planning
per such statement, ~1.1 ms of the server's time per instance on the engine
benchmark (server log, ``log_min_duration_statement = 0``: bind 1,131 →
568 ms for 500 instances). A generic plan prunes the same partitions at
executor start-up from the attempt's ``started_at``. Nothing else of the
transaction changes; the console's reads, in their own transactions, keep
PostgreSQL's choice.

The condition is always true and has no columns: PostgreSQL evaluates it
once, as the statement starts; SQLite has no plan cache and never sends it.
"""

from __future__ import annotations

from sqlalchemy import ColumnElement, func, literal_column

#: ``set_config('plan_cache_mode', 'force_generic_plan', true) = …``, true
STEP_GENERIC_PLANS: ColumnElement[bool] = func.set_config(
    literal_column("'plan_cache_mode'"),
    literal_column("'force_generic_plan'"),
    literal_column("true"),
) == literal_column("'force_generic_plan'")
