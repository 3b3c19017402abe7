"""Events leaving the engine (SPEC X-5, X-6): the outbox relay, event
subscriptions and their hits, webhook signing and delivery, automation rules.
The changes of subscriptions, automation rules and connectors, each one
transaction with its audit row, are :mod:`.subscription_changes`,
:mod:`.automation_changes` and :mod:`.connector_changes` (the connectors'
store is ``outbound/``, below the audit)."""
