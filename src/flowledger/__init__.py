"""flowledger: an approval-workflow engine whose every asynchronous step is a
row in a durable job ledger.

Layers, top first (a module imports its own package and lower layers only;
packages on one line are independent of each other — the contract is
``[tool.importlinter]`` in ``pyproject.toml``, checked by ``lint-imports``;
the picture ``docs/architecture.md``)::

    __main__
    cli                      the commands
    api, demo                the HTTP API; the demo data
    runtime                  built once from the settings: db, clock, engine
                             hooks, engine, handler registry, channels, worker
    handlers                 job handlers bound to the runtime's engine;
                             the maintenance services
    compensation, ops        failure policies and repair; operations
    events                   outbox, subscriptions, webhooks, automation
    actions                  the one runner of compensation/automation actions
    engine, worker           the process engine; pools, leader, supervisor
    access, notify           users, tokens, permissions, audit; notifications
    outbound, ledger         outbound calls; the job ledger (its driver)
    definitions              parsing and validating definitions
    db, clock, settings      storage; time; configuration
    errors, states           the shared vocabulary

Nothing is wired by an import: :func:`flowledger.runtime.build_runtime`
builds the pieces a process runs with.
"""

__version__ = "0.1.0"
