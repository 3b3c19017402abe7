"""Events leaving the engine (SPEC X-5, X-6): the outbox relay, event
subscriptions and their hits, webhook signing and delivery, automation rules.
The operator's changes of subscriptions and automation rules, each one
transaction with its audit row, are :mod:`.subscription_changes` and
:mod:`.automation_changes`."""
