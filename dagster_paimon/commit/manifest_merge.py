"""Java's ManifestFileMerger (2.0, as every commit and compact-manifests run it).

Paimon's commit merges the latest snapshot's base + delta manifests into the new base list at
every commit, so a table's reads stay near `manifest.merge-min-count` manifests however long its
history. Minor: runs of manifests reaching `manifest.target-file-size` merge, a short tail only
past the min count. Full: once the bytes that must change (manifests with DELETE entries or
below the target) pass `manifest.full-compaction-threshold-size`, every ADD/DELETE pair drops.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

from dagster_paimon.errors import CorruptMetadataError
from dagster_paimon.format.manifest import ManifestEntry, ManifestFileMeta, TableManifests
from dagster_paimon.format.table import FileStoreTable
from dagster_paimon.io.filekind import ADD
from dagster_paimon.options import (
    MANIFEST_FULL_COMPACTION_SIZE,
    MANIFEST_MERGE_MIN_COUNT,
    MANIFEST_TARGET_SIZE,
    at_least,
    memory_bytes,
    read_option,
)
from dagster_paimon.snapshot.entries import entry_identifier
from dagster_paimon.storage.pool import parallel_map

log = logging.getLogger(__name__)

FULL, MINOR = "full", "minor"
MIB = 1024 * 1024

ReadEntries = Callable[[ManifestFileMeta], list[ManifestEntry]]


@dataclass(frozen=True)
class ManifestMergeOptions:
    """The three knobs of ManifestFileMerger, defaults as in CoreOptions.java."""

    target_size: int = 8 * MIB
    min_count: int = 30
    full_compaction_size: int = 16 * MIB

    @classmethod
    def from_table_options(cls, options: Mapping[str, str]) -> ManifestMergeOptions:
        """Parse the manifest.* options; bad values raise InvalidOptionError."""
        return cls(
            target_size=read_option(options, MANIFEST_TARGET_SIZE, memory_bytes, 8 * MIB),
            min_count=read_option(options, MANIFEST_MERGE_MIN_COUNT, at_least(1), 30),
            full_compaction_size=read_option(
                options, MANIFEST_FULL_COMPACTION_SIZE, memory_bytes, 16 * MIB
            ),
        )

    def forced_full(self) -> ManifestMergeOptions:
        """Java's compact_manifest procedure: full compaction at any size, batches of one merge."""
        return replace(self, min_count=1, full_compaction_size=1)


class ManifestWriter(Protocol):
    """Where merged entries go: rolling manifest files, or an estimate for a dry run."""

    def write(self, entries: list[ManifestEntry]) -> list[ManifestFileMeta]:
        """Write entries into one or more manifests and describe them."""
        ...


def merge_entries(entries: Sequence[ManifestEntry], into: dict[tuple, ManifestEntry]) -> None:
    """FileEntry.mergeEntries: ADD puts; DELETE cancels its ADD, or stays for an earlier one."""
    for e in entries:
        ident = entry_identifier(e)
        if e.kind == ADD:
            if ident in into:
                raise CorruptMetadataError(
                    f"file {e.file.file_name} (level {e.file.level}) is added twice in the "
                    "manifests being merged"
                )
            into[ident] = e
        elif ident in into:
            del into[ident]
        else:
            into[ident] = e


@dataclass(frozen=True)
class MergeOutcome:
    """The new manifest list, which path produced it and how many inputs were rewritten."""

    manifests: list[ManifestFileMeta]
    mode: str | None
    rewritten: int


def _minor(
    inputs: list[ManifestFileMeta],
    read: ReadEntries,
    writer: ManifestWriter,
    options: ManifestMergeOptions,
) -> MergeOutcome:
    """Merge runs of manifests reaching the target size; a short tail only past min_count."""
    result: list[ManifestFileMeta] = []
    rewritten = 0

    def merge(batch: list[ManifestFileMeta]) -> None:
        nonlocal rewritten
        if len(batch) == 1:
            result.append(batch[0])
            return
        merged: dict[tuple, ManifestEntry] = {}
        for entries in parallel_map(read, batch):
            merge_entries(entries, merged)
        rewritten += len(batch)
        if merged:
            result.extend(writer.write(list(merged.values())))

    batch: list[ManifestFileMeta] = []
    size = 0
    for m in inputs:
        size += m.file_size
        batch.append(m)
        if size >= options.target_size:
            merge(batch)
            batch, size = [], 0
    if len(batch) >= options.min_count:
        merge(batch)
    else:
        result.extend(batch)
    return MergeOutcome(result, MINOR if rewritten else None, rewritten)


def _stat(row: Any, index: int) -> object:
    """One field of a partition-stats row (BinaryRow from disk, GenericRow when fresh)."""
    return None if row is None else row.get_field(index)


def _may_contain(m: ManifestFileMeta, partitions: set[tuple]) -> bool:
    """Java's MultiplePartitionPredicate on manifest stats: per field, bounding boxes overlap."""
    stats = m.partition_stats
    rows = m.num_added_files + m.num_deleted_files
    for i in range(len(next(iter(partitions)))):
        column = [p[i] for p in partitions]
        values = [v for v in column if v is not None]
        nulls = stats.null_counts[i] if stats.null_counts is not None else None
        may_null = nulls is None or nulls > 0
        low, high = _stat(stats.min_values, i), _stat(stats.max_values, i)
        if not values:
            ok = may_null
        elif nulls is not None and nulls == rows:
            ok = may_null and len(values) < len(column)
        elif low is None or high is None:
            ok = True
        else:
            try:
                ok = high >= min(values) and low <= max(values)
            except TypeError:
                ok = True
            ok = ok or (may_null and len(values) < len(column))
        if not ok:
            return False
    return True


def _full(
    inputs: list[ManifestFileMeta],
    read: ReadEntries,
    writer: ManifestWriter,
    options: ManifestMergeOptions,
    partitioned: bool,
) -> MergeOutcome | None:
    """Drop every ADD/DELETE pair, rewriting small or touched manifests; None if not worth it."""

    def must_change(m: ManifestFileMeta) -> bool:
        return m.num_deleted_files > 0 or m.file_size < options.target_size

    if sum(m.file_size for m in inputs if must_change(m)) < options.full_compaction_size:
        return None
    with_deletes = [m for m in inputs if m.num_deleted_files > 0]
    deleted = {
        entry_identifier(e)
        for chunk in parallel_map(read, with_deletes)
        for e in chunk
        if e.kind != ADD
    }
    partitions = {ident[0] for ident in deleted}
    result: list[ManifestFileMeta] = []
    to_merge: list[ManifestFileMeta] = []
    for m in inputs:
        touched = bool(deleted) and (not partitioned or _may_contain(m, partitions))
        (to_merge if must_change(m) or touched else result).append(m)
    if len(to_merge) <= 1:
        return None
    log.info("full manifest compaction: %d of %d manifests to read", len(to_merge), len(inputs))
    survivors: list[ManifestEntry] = []
    rewritten = 0
    for m, entries in zip(to_merge, parallel_map(read, to_merge), strict=True):
        adds = [e for e in entries if e.kind == ADD]
        kept = [e for e in adds if entry_identifier(e) not in deleted]
        if must_change(m) or len(kept) < len(adds):
            survivors.extend(kept)
            rewritten += 1
        else:
            result.append(m)
    return MergeOutcome(result + writer.write(survivors), FULL, rewritten)


def merge_manifests(
    inputs: list[ManifestFileMeta],
    read: ReadEntries,
    writer: ManifestWriter,
    options: ManifestMergeOptions,
    *,
    partitioned: bool,
) -> MergeOutcome:
    """Full compaction when the must-change bytes reach the trigger, else minor compaction."""
    full = _full(inputs, read, writer, options, partitioned)
    return full if full is not None else _minor(inputs, read, writer, options)


class RollingManifestWriter:
    """Rolling manifest files at the target size; remembers what it wrote for cleanup."""

    def __init__(self, table: FileStoreTable, target_size: int):
        self.manifests = TableManifests(table)
        self.target_size = target_size
        self.written: list[str] = []

    def write(self, entries: list[ManifestEntry]) -> list[ManifestFileMeta]:
        """Write entries, splitting at the target size as Paimon's rolling writer does."""
        metas = self.manifests.write(entries, self.target_size)
        self.written += [m.file_name for m in metas]
        return metas


class EntryReader:
    """Reads manifests with value statistics kept (merged entries are written back as read),
    each once: manifests never change, so a merge retried after a lost race reads only the
    manifests the new snapshots added."""

    def __init__(self, table: FileStoreTable):
        self._manifests = TableManifests(table)
        self._read: dict[str, list[ManifestEntry]] = {}

    def __call__(self, manifest: ManifestFileMeta) -> list[ManifestEntry]:
        """The entries of one manifest."""
        entries = self._read.get(manifest.file_name)
        if entries is None:
            entries = self._manifests.entries_of(manifest, with_stats=True)
            self._read[manifest.file_name] = entries
        return entries

    @property
    def manifests_read(self) -> int:
        """How many distinct manifests were read."""
        return len(self._read)
