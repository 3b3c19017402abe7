"""The durable job ledger of SPEC L-1 … L-22: enqueue, claim, lease, settle,
step receipts, generation fencing, pause/resume, cleanup, manual retry and
cancel. It knows job types only as names, pools and budgets (plus the two
type lists of L-18 and L-22 in :mod:`~flowledger.ledger.types`); it never
imports the engine, the worker or anything above it.

All storage goes through one :class:`~flowledger.ledger.driver.LedgerDriver`
(:mod:`flowledger.ledger.driver`), the only writer of the job tables. A
driver method whose first parameter is ``conn`` runs in the caller's
transaction; one whose first parameter is ``db`` opens and commits its own
(claim, batch settlement, lease renewal, the side-effect marker, next due).
The module-level functions (``enqueue``, ``enqueue_bulk``, ``jobs_claim``, ``job_settle`` …)
are the same operations addressed by connection or database: each picks the
driver of its dialect and delegates. Every operation takes an explicit
``now``.
"""
