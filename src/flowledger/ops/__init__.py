"""Operations: the read models and operator actions of SPEC O- and L-23 …
L-25, one sub-package per thing an operator looks after. Read-only queries
live apart from actions. It imports the ledger and the engine, never the API
or the CLI.

- :mod:`.monitor` — the instance list, its filter, export and saved views
  (O-1, O-2);
- :mod:`.runtime` — the runtime status panel, its live worker nodes and the
  engine diagnostics (L-23, O-18);
- :mod:`.health` — the health inspection, its rules, score and history
  (O-16);
- :mod:`.diagnostics` — one instance's diagnostics document, consistency
  verdict and diagnostic bundle (O-3, O-7, O-10, O-12);
- :mod:`.jobs` — the job ledger's list, chains, failure clusters, retry /
  skip and replay (L-24, L-25);
- :mod:`.recovery` — targeted recovery actions and batch recovery of stuck
  instances (O-6, O-18);
- :mod:`.interventions` — operator actions on one instance or task: form
  corrections, reassign, remind, suspend / resume by definition (O-3, O-5);
- :mod:`.analytics` — the analytics panels (O-14);
- :mod:`.retention` — data-retention policies and runs (O-20);
- :mod:`.alerts` — alert metrics, rules, silences, the evaluator and the
  Prometheus exposition (O-22);
- :mod:`.migration` — migrating running instances to another definition
  version (issue 30);
- :mod:`.batch` — the one batch-operation mechanism every operator batch
  runs through (O-6, O-18, L-24).

The sub-packages form a DAG (import-linter's ``acyclic`` contract): ``batch``
imports nothing of ``ops``; ``health`` reads ``runtime``; ``alerts`` reads
``health`` and ``runtime``; ``diagnostics`` reads ``health`` and ``jobs``;
``jobs``, ``recovery``, ``interventions`` and ``retention`` run through
``batch``, ``recovery`` also through ``jobs``; ``migration`` reads
``monitor``."""
