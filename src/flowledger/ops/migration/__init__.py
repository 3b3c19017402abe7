"""Migrating running instances to another version of their definition
(issue 30): a plan (definition key, source versions, the instances, the
target version, a node mapping drafted from same-key same-type nodes and
editable, values for new required form fields), an exact dry run per
instance that writes nothing, and a run that migrates every instance the
dry run does not block, each in its own transaction under its row lock.

- :mod:`.model`: the plan, its errors, the per-instance result document;
- :mod:`.mapping`: the drafted and validated node mapping;
- :mod:`.reads`: what the dry run and the run read (definitions, the
  selected instances, their tokens, tasks, frames, jobs, children);
- :mod:`.inputs`: what every instance of a plan shares, indexed once;
- :mod:`.timeouts`: the timeout jobs added and canceled on the target;
- :mod:`.planner`: the pure computation of one instance's result and the
  write it implies (:class:`~flowledger.engine.store.migrate.InstanceMigration`);
- :mod:`.predicted_checks`: the O-12 consistency rules and the O-16 health
  rules on a predicted result;
- :mod:`.plans`: saved plans and their per-instance results;
- :mod:`.service`: preview, run, progress and the version drainage view;
- :mod:`.operator_runs`: the plan checked against the caller, and the run
  as an operator's audited action.

The write itself is the engine store's
(:meth:`~flowledger.engine.store.protocol.EngineStore.instance_migrate`)."""
