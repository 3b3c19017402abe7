"""One router per area (STYLE), each under ``/api/workflows`` and included
by :func:`flowledger.api.app.api_router`; every route declares who may call
it (:mod:`flowledger.api.route_access`). A route is thin: it parses,
authorizes, calls one service function and maps the answer; it opens no
writing transaction — the service owns its transaction and its audit row
(:func:`flowledger.access.audit.audited_change`). The routers still wrapping
a self-committing call in :func:`flowledger.access.audit.audited` are named
by the test tests/unit/test_thin_routers.py.

The engine's own API:

- :mod:`.definitions` — deploy and read definitions (SPEC E-1);
- :mod:`.instances` — start, list, read, lifecycle actions, comments (E-2, E-6);
- :mod:`.instance_monitor` — status counts, export, form correction (O-1..O-3);
- :mod:`.migrations` — migrate running instances to another version, version
  drainage (issue 30);
- :mod:`.instance_ops` — diagnostics, force jump, batch recovery, bundle (O-3..O-7);
- :mod:`.tasks` — my tasks, task actions, reassign (E-5, O-5);
- :mod:`.task_reminders` — remind the assignee (O-5);
- :mod:`.schedules` — cron schedules and manual launch (E-9);
- :mod:`.me` — the caller; :mod:`.messages` — in-app messages (X-7);
- :mod:`.views` — saved list views (O-1).

Integrations: :mod:`.connectors` (X-3), :mod:`.subscriptions` (X-5),
:mod:`.automation` (X-6), :mod:`.callbacks` (signed callbacks, X-1, X-2),
:mod:`.compensation` (tickets, C-8, C-9).

Operations under ``/engine`` and ``/analytics``: :mod:`.jobs` (ledger reads,
L-23, L-25), :mod:`.job_actions` (retry, skip, replay, L-24),
:mod:`.engine_diagnostics` (O-18), :mod:`.recovery` (targeted recovery,
O-18), :mod:`.health` (O-16), :mod:`.retention` (O-20), :mod:`.batches`
(recorded batch operations described by id, issue 29 item 4), :mod:`.worker_nodes`
(L-23), :mod:`.alerts` (O-22) and :mod:`.analytics` (O-14);
:mod:`.job_pauses` (pause a pool or a job type) and :mod:`.instance_scope`
(suspend or resume a definition's running instances; issue 31 item 3).

The live console: :mod:`.live` — the change events stream (server-sent
events under ``/events``, issue 33 item 2).
"""
