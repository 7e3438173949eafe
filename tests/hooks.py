"""The maintenance calls as the suite drives them: the public functions in a test's context.

`now_ms` or `now` (a fixed clock: epoch milliseconds, or the local wall clock), `files` (a file
store, e.g. one injecting faults or races) and `snapshot_writer` become a MaintenanceContext;
retention given as the engine's RetentionOverrides and orphan age in milliseconds become the
public arguments (timedelta durations, keyword arguments, also tested in
tests/test_paimon_table.py).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from pypaimon.table.file_store_table import FileStoreTable

from dagster_paimon.maintenance import auto_tags, expire, manifests, orphans, partitions, tags
from dagster_paimon.maintenance.context import Clock, FixedClock, MaintenanceContext, SystemClock
from dagster_paimon.maintenance.expire import ExpiryResult
from dagster_paimon.maintenance.manifests import ManifestCompactionResult
from dagster_paimon.maintenance.options import DAY_MS, RetentionOverrides
from dagster_paimon.maintenance.orphans import OrphanResult
from dagster_paimon.maintenance.partitions import PartitionExpiryResult
from dagster_paimon.maintenance.tags import TagResult
from dagster_paimon.storage.files import TableFiles
from dagster_paimon.storage.snapshots import SnapshotWriter, create_snapshot_if_absent

__all__ = [
    "compact_manifests",
    "context",
    "create_automatic_tags",
    "create_tag",
    "expire_changelogs",
    "expire_partitions",
    "expire_snapshots",
    "expire_tags",
    "remove_orphans",
]


def context(
    *,
    now_ms: int | None = None,
    now: datetime | None = None,
    files: TableFiles | None = None,
    snapshot_writer: SnapshotWriter = create_snapshot_if_absent,
) -> MaintenanceContext:
    """A context with a fixed clock (when `now_ms` or `now` is given) and a file store."""
    clock: Clock = SystemClock()
    if now_ms is not None:
        clock = FixedClock.at_ms(now_ms)
    elif now is not None:
        clock = FixedClock.at(now)
    return MaintenanceContext(files=files, clock=clock, snapshot_writer=snapshot_writer)


def _retention(overrides: RetentionOverrides | None) -> dict[str, Any]:
    """The public expiry arguments of the engine's overrides."""
    o = overrides or RetentionOverrides()
    older_than = None if o.time_retained_ms is None else timedelta(milliseconds=o.time_retained_ms)
    return {
        "older_than": older_than,
        "retain_min": o.retain_min,
        "retain_max": o.retain_max,
        "max_deletes": o.max_deletes,
    }


def expire_snapshots(
    table: FileStoreTable,
    *,
    overrides: RetentionOverrides | None = None,
    dry_run: bool = False,
    **hooks: Any,
) -> ExpiryResult:
    """Snapshot expiry with overrides=, dry_run= and the context's now_ms=, files=."""
    return expire.expire_snapshots(
        table, **_retention(overrides), dry_run=dry_run, context=context(**hooks)
    )


def expire_changelogs(
    table: FileStoreTable,
    *,
    overrides: RetentionOverrides | None = None,
    dry_run: bool = False,
    **hooks: Any,
) -> ExpiryResult:
    """Changelog expiry with overrides=, dry_run= and the context's now_ms=, files=."""
    return expire.expire_changelogs(
        table, **_retention(overrides), dry_run=dry_run, context=context(**hooks)
    )


def remove_orphans(
    table: FileStoreTable, *, older_than_ms: int = DAY_MS, dry_run: bool = False, **hooks: Any
) -> OrphanResult:
    """Orphan removal with the age in milliseconds and the context's now_ms=, files=."""
    return orphans.remove_orphans(
        table,
        older_than=timedelta(milliseconds=older_than_ms),
        dry_run=dry_run,
        context=context(**hooks),
    )


def compact_manifests(
    table: FileStoreTable, *, full: bool = False, dry_run: bool = False, **hooks: Any
) -> ManifestCompactionResult:
    """Manifest compaction with the context's files=, snapshot_writer=."""
    return manifests.compact_manifests(table, full=full, dry_run=dry_run, context=context(**hooks))


def expire_partitions(
    table: FileStoreTable, *, now: datetime | None = None, **kwargs: Any
) -> PartitionExpiryResult:
    """Partition expiry with the context's local clock `now`."""
    return partitions.expire_partitions(table, **kwargs, context=context(now=now))


def create_tag(
    table: FileStoreTable, name: str, *, now: datetime | None = None, **kwargs: Any
) -> TagResult:
    """Tag creation with the context's local clock `now` (the tag's create time)."""
    return tags.create_tag(table, name, **kwargs, context=context(now=now))


def expire_tags(
    table: FileStoreTable, *, dry_run: bool = False, now: datetime | None = None
) -> TagResult:
    """Tag expiry with the context's local clock `now`."""
    return tags.expire_tags(table, dry_run=dry_run, context=context(now=now))


def create_automatic_tags(
    table: FileStoreTable, *, dry_run: bool = False, now: datetime | None = None
) -> TagResult:
    """Automatic tags with the context's local clock `now`."""
    return auto_tags.create_automatic_tags(table, dry_run=dry_run, context=context(now=now))
