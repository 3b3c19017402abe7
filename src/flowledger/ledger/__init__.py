"""The durable job ledger of SPEC L-1 … L-22: enqueue, claim, lease, settle,
step receipts, generation fencing, pause/resume, cleanup, manual retry and
cancel. It knows job types only as the values its callers declare (a name,
a pool, a budget: :mod:`~flowledger.ledger.types`); which types pause with
an instance (L-18) and which its cleanup cancels (L-22) the caller passes
(the engine's lists are in ``engine/job_types.py``). It never imports the
engine, the worker or anything above it.

All storage goes through one :class:`~flowledger.ledger.driver.LedgerDriver`
(:mod:`flowledger.ledger.driver`), the only writer of the job tables. A
driver method whose first parameter is ``conn`` runs in the caller's
transaction; one whose first parameter is ``db`` opens and commits its own
(claim, batch settlement, lease renewal, the side-effect marker, next due).
Callers hold the driver chosen once for their database (``Runtime.ledger``,
``Engine.store.ledger``, ``JobContext.ledger``, a service's ``self.ledger``)
and call its methods; nothing picks a driver by dialect per call except the
deprecated module-level ``enqueue`` of :mod:`flowledger.worker`.
A caller that locks its own rows before
the job's in a step passes a :class:`~flowledger.ledger.receipts.StepLock`,
which builds its statement from the fence the driver exports
(:mod:`flowledger.ledger.driver.fence`); the ledger runs no caller SQL.
Every operation takes an explicit ``now``.
"""
