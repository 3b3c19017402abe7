"""Frozen definition snapshots (SPEC E-2): the parsed definition of an
instance comes from the snapshot stored on the instance row, never from the
latest deployment. A snapshot is a copy of one immutable definition version,
so an engine (one per database) caches parsed snapshots per version id: a
step reads an instance's snapshot column only when its version is not
cached yet."""

from __future__ import annotations

from typing import Any

from flowledger.definitions.model import ProcessDefinition


class SnapshotCache:
    def __init__(self, limit: int = 1024) -> None:
        self.limit = limit
        self._cache: dict[int, ProcessDefinition] = {}

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
