"""flowledger: an approval-workflow engine whose every asynchronous step is a
row in a durable job ledger.

Layers (a lower layer never imports a higher one)::

    cli -> worker -> ledger -> db
    (api -> engine/ops arrive with later work)
"""

__version__ = "0.1.0"
