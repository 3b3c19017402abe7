"""Instance monitoring (SPEC O-1, O-2): the instance list, its status counts
and its export, all under one filter, and the saved views of every list.

- :mod:`.filters` — the one :class:`~.filters.InstanceFilter` of the list,
  the counts and the export (O-1, O-2);
- :mod:`.queries` — the list with keyset paging, counts per status, the
  export's keyset batches and current positions (O-1, O-2);
- :mod:`.export` — the CSV / XLSX export of the current filter (O-2);
- :mod:`.saved_views` — named filter sets per user and scope (O-1)."""
