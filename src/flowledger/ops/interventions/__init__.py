"""Operator interventions on instances and tasks (SPEC O-3, O-4, O-5, E-7; issue
31): each one engine step under the instance's row lock, audited.

- :mod:`.form_corrections` — fix an instance's form data, then retry (O-3,
  E-7);
- :mod:`.force_jumps` — move an instance's execution to another node,
  audited (O-4);
- :mod:`.task_reassign` — move a pending task to another user (O-5);
- :mod:`.task_reminders` — remind a task's assignee, at most once per
  interval (O-5, X-7);
- :mod:`.scope_suspend` — suspend or resume every instance of a definition
  at once, with a dry run (issue 31 item 3)."""
