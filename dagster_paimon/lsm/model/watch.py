"""Levels of many tables between sensor ticks: a table is re-read only after it committed.

A sensor watching hundreds of tables on an object store pays per request. Keeping each
table's handle and last levels in the process, an unchanged table costs reading its LATEST
hint and probing for the snapshot after it; only tables with a new snapshot read manifests.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from dagster_paimon.format.catalog import Catalog
from dagster_paimon.format.table import FileStoreTable
from dagster_paimon.lsm.model.levels import TableLevels, levels_at
from dagster_paimon.snapshot.resolve import latest_snapshot_id, read_snapshot, resolve_snapshot
from dagster_paimon.table import get_table

# Options altered without a commit (say a new compaction trigger) show after at most this long.
TABLE_MAX_AGE_S = 300.0


@dataclass(frozen=True)
class _Seen:
    """A table handle, when it was opened, and its levels at the last snapshot read."""

    table: FileStoreTable
    opened: float
    levels: TableLevels | None = None


class LevelsWatch:
    """Each watched table's handle and last levels, kept for the life of the process."""

    def __init__(self, table_max_age_s: float = TABLE_MAX_AGE_S):
        self.table_max_age_s = table_max_age_s
        self._seen: dict[tuple[str, str], _Seen] = {}

    def table(self, identifier: str, *, warehouse: str = "") -> FileStoreTable | None:
        """The handle `levels` last used for the table (None before its first read)."""
        seen = self._seen.get((warehouse, identifier))
        return seen.table if seen is not None else None

    def levels(self, catalog: Catalog, identifier: str, *, warehouse: str = "") -> TableLevels:
        """The table's levels at its latest snapshot, re-read only if that snapshot is new.

        `warehouse` names the catalog when one watch serves several. A table is reopened when
        a snapshot carries a newer schema, when its handle is older than `table_max_age_s`,
        and when it looks empty (it may have been dropped).
        """
        key = (warehouse, identifier)
        seen = self._seen.get(key)
        if seen is None or time.monotonic() - seen.opened > self.table_max_age_s:
            seen = _Seen(get_table(catalog, identifier), time.monotonic())
        latest = latest_snapshot_id(seen.table)
        if latest is None:
            seen = _Seen(get_table(catalog, identifier), time.monotonic())
            latest = latest_snapshot_id(seen.table)
        if seen.levels is not None and seen.levels.snapshot_id == latest:
            self._seen[key] = seen
            return seen.levels
        snapshot = read_snapshot(seen.table, latest) if latest is not None else None
        if snapshot is None and latest is not None:
            snapshot = resolve_snapshot(seen.table, None)
        if snapshot is not None and snapshot.schema_id > seen.table.table_schema.id:
            seen = _Seen(get_table(catalog, identifier), time.monotonic())
        levels = levels_at(seen.table, snapshot)
        self._seen[key] = _Seen(seen.table, seen.opened, levels)
        return levels
