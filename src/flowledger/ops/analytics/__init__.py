"""The analytics panels (SPEC O-14): read-only aggregate queries within an
:class:`~.sql.AnalyticsScope`.

- :mod:`.instances` — totals, daily starts and finishes, top definitions;
- :mod:`.tasks` — node bottlenecks, approver workload and timeouts;
- :mod:`.async_work` — jobs, webhook deliveries and child instances per
  status (async health);
- :mod:`.sampling` — the block sample a panel reads instead of its table
  when the exact read would cost millions of rows (issue 34 item 3);
- :mod:`.sql` — the scope, the read transaction and the shared helpers;
- :mod:`.time_zone` — which time zone the day buckets use."""
