"""The maintenance calls with the engine's test hooks, which the public functions do not take.

`now_ms` (the clock retention and orphan age are measured against), `files` (a file store, e.g.
one injecting faults or races), `snapshot_writer`, retention as the engine's RetentionOverrides
and orphan age in milliseconds: the suite drives the engine through these; the public
signatures (timedelta durations, keyword arguments) are tested in tests/test_paimon_table.py.
"""

from __future__ import annotations

from typing import Any

from pypaimon.table.file_store_table import FileStoreTable

from dagster_paimon.maintenance.expire import CHANGELOGS, SNAPSHOTS, ExpiryResult, _expire
from dagster_paimon.maintenance.manifests import _compact_manifests as compact_manifests
from dagster_paimon.maintenance.orphans import _remove_orphans as remove_orphans
from dagster_paimon.maintenance.partitions import _expire_partitions as expire_partitions
from dagster_paimon.maintenance.tags import _create_automatic_tags as create_automatic_tags
from dagster_paimon.maintenance.tags import _create_tag as create_tag
from dagster_paimon.maintenance.tags import _expire_tags as expire_tags

__all__ = [
    "compact_manifests",
    "create_automatic_tags",
    "create_tag",
    "expire_changelogs",
    "expire_partitions",
    "expire_snapshots",
    "expire_tags",
    "remove_orphans",
]


def expire_snapshots(table: FileStoreTable, **kwargs: Any) -> ExpiryResult:
    """Snapshot expiry with overrides=, now_ms=, files=, dry_run=."""
    return _expire(table, SNAPSHOTS, **kwargs)


def expire_changelogs(table: FileStoreTable, **kwargs: Any) -> ExpiryResult:
    """Changelog expiry with overrides=, now_ms=, files=, dry_run=."""
    return _expire(table, CHANGELOGS, **kwargs)
