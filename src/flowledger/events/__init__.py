"""Events leaving the engine (SPEC X-5, X-6): the outbox relay, event
subscriptions and their hits, webhook signing and delivery, automation rules."""
