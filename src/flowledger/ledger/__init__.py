"""The durable job ledger of SPEC L-1 … L-22: enqueue, claim, lease, settle,
step receipts, generation fencing, pause/resume, cleanup, manual retry and
cancel. It knows job types only as names, pools and budgets; it never imports
the engine, the worker or anything above it. Every function takes the
connection of the caller's transaction and an explicit ``now``.
"""
