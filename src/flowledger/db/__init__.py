"""Storage: the schema (SQLAlchemy Core), migrations (Alembic), engine
creation and the few statements that differ by dialect. Nothing above this
package writes dialect-specific SQL. It never imports ledger, worker or any
higher layer."""
