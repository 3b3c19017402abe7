"""Actions: the one runner of the external actions that compensation
(SPEC C-4) and automation rules (X-6) both carry — an HTTP call, a connector
call, an e-mail, an SMS. Each caller keeps what is its own (the values its
templates see, its receipts, its ticket or rule bookkeeping)."""
