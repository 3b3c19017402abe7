"""The node kinds (SPEC E-3, X-1, X-2): what entering each type of node does
inside the running step. Each kind's ``enter_*`` function takes the step, the
token entering and the node, and returns the tokens that keep moving (none
when the token rests at a wait state or is consumed at an end).

- :mod:`.start_end` — ``start``, ``end``;
- :mod:`.people` — ``approval``, ``handle``, ``cc``, ``catch`` (human tasks);
- :mod:`.waits` — ``delay``, ``subprocess`` (system waits with their job);
- :mod:`.gateways` — ``exclusive``, ``parallel``, ``inclusive`` (fork, join);
- :mod:`.outbound` — ``trigger``, ``external_approval`` (the dispatch job).

They sit above the step, tokens, tasks, the lifecycle and the failure seam
and below :mod:`flowledger.engine.runner`, which builds the table from node
type to ``enter_*`` function and moves tokens through it; no node kind
imports the runner (issue 28 item 7). This package's ``__init__`` imports
nothing."""
