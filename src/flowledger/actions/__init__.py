"""Actions: the one runner (:mod:`flowledger.actions.runner`) of the actions
that compensation (SPEC C-4) and automation rules (X-6) both carry — an HTTP
call, a connector call, an e-mail, an SMS and the ``updateData`` form write —
with the outcome of a run and the actor they act as. Each caller keeps what
is its own (the values its templates see, its receipts, its ticket or rule
bookkeeping)."""
