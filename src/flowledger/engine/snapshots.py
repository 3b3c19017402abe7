"""Frozen definition snapshots (SPEC E-2): the parsed definition of an
instance comes from the snapshot stored on the instance row, never from the
latest deployment. A snapshot is a copy of one immutable definition version,
so an engine (one per database) caches parsed snapshots per version id: a
step reads an instance's snapshot column only when its version is not
cached yet.

It also remembers, per tenant and key, the latest version a start has seen
(:meth:`SnapshotCache.latest`): a start of the latest version inserts from
the remembered one, and its insert checks that it is still the latest
(``engine/store/start``); when it is not, the start reads the latest and
remembers that instead. Versions are immutable and never deleted, so a
remembered one is never wrong, only possibly superseded."""

from __future__ import annotations

from typing import Any

from flowledger.definitions.model import ProcessDefinition


class SnapshotCache:
    def __init__(self, limit: int = 1024) -> None:
        self.limit = limit
        self._cache: dict[int, ProcessDefinition] = {}
        self._latest: dict[tuple[str, str], tuple[int, int]] = {}

    def latest(self, tenant: str, key: str) -> tuple[int, int] | None:
        """The (version id, version number) last seen as the latest of
        ``key`` in ``tenant``, when its parsed definition is cached."""
        found = self._latest.get((tenant, key))
        return found if found is not None and found[0] in self._cache else None

    def remember_latest(self, tenant: str, key: str, ref: tuple[int, int] | None) -> None:
        """Remember ``ref`` as the latest version of ``key`` (None: forget it)."""
        if ref is None:
            self._latest.pop((tenant, key), None)
            return
        if len(self._latest) >= self.limit:
            self._latest.clear()
        self._latest[(tenant, key)] = ref

    def cached(self, definition_id: int) -> ProcessDefinition | None:
        """The parsed definition of version ``definition_id``, if cached."""
        return self._cache.get(definition_id)

    def get(self, definition_id: int, snapshot: dict[str, Any]) -> ProcessDefinition:
        defn = self._cache.get(definition_id)
        if defn is None:
            defn = ProcessDefinition.model_validate(snapshot)
            if len(self._cache) >= self.limit:
                self._cache.clear()
            self._cache[definition_id] = defn
        return defn


def snapshot_of(defn: ProcessDefinition) -> dict[str, Any]:
    return defn.model_dump(mode="json", by_alias=True, exclude_none=True)
