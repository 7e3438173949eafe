"""A snapshot's live file entries, their identities, and a level's files as one sorted run."""

from __future__ import annotations

from collections.abc import Iterable
from functools import cmp_to_key
from itertools import pairwise

from dagster_paimon.errors import CorruptMetadataError
from dagster_paimon.format.manifest import (
    DataFileMeta,
    ManifestEntry,
    TableManifests,
)
from dagster_paimon.format.metadata import Snapshot
from dagster_paimon.format.runs import default_key_comparator
from dagster_paimon.format.table import FileStoreTable
from dagster_paimon.snapshot.collector import collector_paused


def entry_identifier(entry: ManifestEntry) -> tuple:
    """Java's FileEntry.Identifier: an upgrade (same name, other level) is another file."""
    f = entry.file
    return (
        tuple(entry.partition.values),
        entry.bucket,
        f.level,
        f.file_name,
        tuple(f.extra_files or ()),
        f.embedded_index,
        f.external_path,
    )


def live_entries(
    table: FileStoreTable, snapshot: Snapshot | None, *, with_stats: bool = False
) -> list[ManifestEntry]:
    """Live data-file entries of a snapshot: base + delta manifests with DELETEs applied.

    Value statistics are dropped unless asked for: only commits that re-write entries need them.
    """
    if snapshot is None:
        return []
    try:
        with collector_paused():
            manifests = TableManifests(table)
            return manifests.entries(manifests.all(snapshot), with_stats=with_stats)
    except (ValueError, EOFError, KeyError, TypeError, IndexError) as e:
        raise CorruptMetadataError(
            f"cannot read the manifests of snapshot {snapshot.id} of "
            f"{table.identifier.get_full_name()}: {type(e).__name__}: {e}"
        ) from e


def sorted_run_files(level: int, files: Iterable[DataFileMeta]) -> list[DataFileMeta]:
    """Files of one level >= 1 sorted by min key; overlapping key ranges are corrupt metadata."""

    def by_min_key(a: DataFileMeta, b: DataFileMeta) -> int:
        return default_key_comparator(a.min_key, b.min_key)

    ordered = sorted(files, key=cmp_to_key(by_min_key))
    for left, right in pairwise(ordered):
        if default_key_comparator(left.max_key, right.min_key) >= 0:
            raise CorruptMetadataError(
                f"level {level} files {left.file_name} and {right.file_name} have overlapping "
                "key ranges; a level >= 1 must be one sorted run"
            )
    return ordered
