"""The engine's store (issue 28 item 5): the SQL an engine step sends, per
dialect, beside the ledger's driver (``ledger/driver/``) — the one place
outside ``db/`` and the ledger driver that may choose SQL by the database
kind (``tests/unit/test_dialect_branches.py``).

- :mod:`~flowledger.engine.store.start`: a new instance and its start token;
- :mod:`~flowledger.engine.store.reserved_ids`: the ids a step reserves in a
  statement it sends anyway (PostgreSQL);
- :mod:`~flowledger.engine.store.tokens`: a fork, a join firing, one token
  consumed;
- :mod:`~flowledger.engine.store.json_rows`: one table's rows as a JSON document,
  its columns from the table's definition;
- :mod:`~flowledger.engine.store.writes`: a step's buffered rows (token
  moves, outbox, form writes, trace, held tasks and forks);
- :mod:`~flowledger.engine.store.instance_end`: the statement that ends an
  instance.

The engine's modules above it (``step``, ``tokens``, ``tasks``,
``lifecycle``, ``instances``, ``write_buffer``) decide what to write; these
modules say how, on each backend. Only ``db/`` and the ledger's modules are
imported from here."""
