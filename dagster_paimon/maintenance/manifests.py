"""Manifest compaction (ManifestFileMerger, PAIMON_SEMANTICS.md section 8), committed as a snapshot.

pypaimon's commits append every commit's manifests to the next base list and never merge them,
so reads slow down commit by commit. Merging rewrites the latest snapshot's manifests into a
smaller set and commits it as the base list of a COMPACT snapshot with an empty delta: the
table's contents do not change. Replaced manifests stay for older snapshots; expiry removes them.
"""

from __future__ import annotations

import logging
import math
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from pypaimon.manifest.manifest_file_manager import ManifestFileManager
from pypaimon.manifest.manifest_list_manager import ManifestListManager
from pypaimon.manifest.schema.manifest_entry import ManifestEntry
from pypaimon.manifest.schema.manifest_file_meta import ManifestFileMeta
from pypaimon.snapshot.snapshot import Snapshot
from pypaimon.table.file_store_table import FileStoreTable

from dagster_paimon.errors import CommitConflictError, CorruptMetadataError
from dagster_paimon.commit.producer import (
    ADD,
    COMPACT,
    CommitRequest,
    SnapshotWriter,
    commit_snapshot,
    entry_identifier,
    new_commit_identity,
)
from dagster_paimon.maintenance.metadata import parallel_map
from dagster_paimon.maintenance.options import ManifestMergeOptions
from dagster_paimon.storage.files import TableFiles
from dagster_paimon.storage.snapshots import create_snapshot_if_absent
from dagster_paimon.storage.warehouse import table_files

log = logging.getLogger(__name__)

FULL, MINOR = "full", "minor"
METRIC_SNAPSHOT_ID = "snapshot_id"
METRIC_MANIFESTS_BEFORE = "manifests_before"
METRIC_MANIFESTS_AFTER = "manifests_after"
METRIC_REWRITTEN_MANIFESTS = "rewritten_manifests"
METRIC_SECONDS = "seconds"

ReadEntries = Callable[[ManifestFileMeta], list[ManifestEntry]]


class ManifestWriter(Protocol):
    """Where merged entries go: rolling manifest files, or an estimate for a dry run."""

    def write(self, entries: list[ManifestEntry]) -> list[ManifestFileMeta]:
        """Write entries into one or more manifests and describe them."""
        ...


def _identifier(e: ManifestEntry) -> tuple:
    """The FileEntry identifier (level included: an upgrade does not cancel)."""
    return entry_identifier(tuple(e.partition.values), e.bucket, e.file)


def merge_entries(entries: Sequence[ManifestEntry], into: dict[tuple, ManifestEntry]) -> None:
    """FileEntry.mergeEntries: ADD puts; DELETE cancels its ADD, or stays for an earlier one."""
    for e in entries:
        ident = _identifier(e)
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


def _stat(row: object, index: int) -> object:
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
        _identifier(e) for chunk in parallel_map(read, with_deletes) for e in chunk if e.kind != ADD
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
        kept = [e for e in adds if _identifier(e) not in deleted]
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


class RollingWriter:
    """Rolling manifest files at the target size; remembers what it wrote for cleanup."""

    def __init__(self, table: FileStoreTable, target_size: int):
        self.manager = ManifestFileManager(table)
        self.target_size = target_size
        self.written: list[str] = []

    def write(self, entries: list[ManifestEntry]) -> list[ManifestFileMeta]:
        """Write entries, splitting at the target size as Paimon's rolling writer does."""
        metas = self.manager.rolling_write(entries, self.target_size, f"manifest-{uuid.uuid4()}")
        self.written += [m.file_name for m in metas]
        return metas


class EstimatingWriter:
    """A dry run's writer: how many manifests the entries would make, writing nothing."""

    def __init__(self, inputs: Sequence[ManifestFileMeta], target_size: int):
        entries = sum(m.num_added_files + m.num_deleted_files for m in inputs)
        self.bytes_per_entry = sum(m.file_size for m in inputs) / max(1, entries)
        self.target_size = target_size

    def write(self, entries: list[ManifestEntry]) -> list[ManifestFileMeta]:
        """Placeholders, one per target size of estimated bytes."""
        if not entries:
            return []
        size = int(len(entries) * self.bytes_per_entry)
        count = max(1, math.ceil(size / self.target_size))
        deletes = sum(1 for e in entries if e.kind != ADD)
        return [
            ManifestFileMeta(
                file_name=f"(dry-run-{n})",
                file_size=size // count,
                num_added_files=len(entries) - deletes,
                num_deleted_files=deletes,
                partition_stats=None,
                schema_id=0,
            )
            for n in range(count)
        ]


def entry_reader(table: FileStoreTable) -> ReadEntries:
    """Read a manifest with value statistics kept: merged entries are written back as read."""
    manager = ManifestFileManager(table)
    return lambda m: manager.read(m.file_name, drop_stats=False, file_size=m.file_size)


@dataclass(frozen=True)
class ManifestCompactionResult:
    """What compact-manifests committed (or, dry, would commit), with its metrics."""

    table: str
    snapshot_id: int | None
    base_snapshot_id: int | None
    full: bool
    dry_run: bool
    mode: str | None
    manifests_before: int
    manifests_after: int
    rewritten_manifests: int
    seconds: float

    def to_metadata(self) -> dict[str, int | float | None]:
        """Metric values keyed by this module's METRIC_* constants, for Dagster."""
        return {
            METRIC_SNAPSHOT_ID: self.snapshot_id,
            METRIC_MANIFESTS_BEFORE: self.manifests_before,
            METRIC_MANIFESTS_AFTER: self.manifests_after,
            METRIC_REWRITTEN_MANIFESTS: self.rewritten_manifests,
            METRIC_SECONDS: round(self.seconds, 3),
        }

    def to_dict(self) -> dict:
        """The compact-manifests JSON of DESIGN.md section 6."""
        return {
            "table": self.table,
            "snapshot_id": self.snapshot_id,
            "base_snapshot_id": self.base_snapshot_id,
            "manifests_before": self.manifests_before,
            "manifests_after": self.manifests_after,
            "rewritten_manifests": self.rewritten_manifests,
            "mode": self.mode,
            "full": self.full,
            "dry_run": self.dry_run,
            "seconds": round(self.seconds, 3),
        }

    def summary(self) -> str:
        """One human line."""
        change = f"{self.manifests_before} -> {self.manifests_after} manifests"
        if self.dry_run:
            return f"{self.table}: would merge ({self.mode or 'nothing to do'}), {change} (dry run)"
        if self.snapshot_id is None:
            return f"{self.table}: manifests need no compaction ({self.manifests_before})"
        return f"{self.table}: committed snapshot {self.snapshot_id} ({self.mode}), {change}"


class _Attempts:
    """Merges per base snapshot: a retry after a lost race merges the new latest again."""

    def __init__(self, table: FileStoreTable, options: ManifestMergeOptions, files: TableFiles):
        self.table = table
        self.options = options
        self.files = files
        self.writer = RollingWriter(table, options.target_size)
        self.outcomes: dict[int, tuple[int, MergeOutcome]] = {}

    def merge(self, latest: Snapshot) -> tuple[int, MergeOutcome]:
        """(manifests before, merge outcome) for a base snapshot, computed once."""
        if latest.id not in self.outcomes:
            inputs = ManifestListManager(self.table).read_all(latest)
            outcome = merge_manifests(
                inputs,
                entry_reader(self.table),
                self.writer,
                self.options,
                partitioned=bool(self.table.partition_keys),
            )
            self.outcomes[latest.id] = (len(inputs), outcome)
        return self.outcomes[latest.id]

    def base_for(self, latest: Snapshot | None) -> list[ManifestFileMeta]:
        """The commit's base list: the merged manifests of whatever is latest now."""
        if latest is None:
            raise CommitConflictError(f"{self.table.identifier.get_full_name()} has no snapshot")
        return self.merge(latest)[1].manifests

    def discard(self, keep: frozenset[str] | set[str] = frozenset()) -> None:
        """Remove manifests this run wrote that no committed snapshot references."""
        base = f"{self.table.table_path.rstrip('/')}/manifest"
        self.files.delete_files([f"{base}/{n}" for n in self.writer.written if n not in keep])


def _require_snapshot(latest: Snapshot | None, _entries: list[ManifestEntry]) -> None:
    """Manifest compaction needs a snapshot to compact."""
    if latest is None:
        raise CommitConflictError("the table has no snapshot to compact manifests of")


def _merge_options(table: FileStoreTable, full: bool) -> ManifestMergeOptions:
    """The table's manifest.* options, or Java's forced full compaction."""
    options = ManifestMergeOptions.from_table_options(table.table_schema.options)
    return options.forced_full() if full else options


def plan_manifest_compaction(
    table: FileStoreTable, *, full: bool = False
) -> ManifestCompactionResult:
    """What compaction would do to the latest snapshot's manifests, writing nothing.

    The merge runs on the real entries; only the number of rolled output files is estimated.
    """
    start = time.perf_counter()
    options = _merge_options(table, full)
    name = str(table.identifier.get_full_name())
    result = ManifestCompactionResult(name, None, None, full, True, None, 0, 0, 0, 0.0)
    latest = table.snapshot_manager().get_latest_snapshot()
    if latest is None:
        return result
    inputs = ManifestListManager(table).read_all(latest)
    writer = EstimatingWriter(inputs, options.target_size)
    partitioned = bool(table.partition_keys)
    outcome = merge_manifests(inputs, entry_reader(table), writer, options, partitioned=partitioned)
    return replace(
        result,
        base_snapshot_id=latest.id,
        mode=outcome.mode,
        manifests_before=len(inputs),
        manifests_after=len(outcome.manifests),
        rewritten_manifests=outcome.rewritten,
        seconds=time.perf_counter() - start,
    )


def compact_manifests(
    table: FileStoreTable,
    *,
    full: bool = False,
    dry_run: bool = False,
    files: TableFiles | None = None,
    snapshot_writer: SnapshotWriter = create_snapshot_if_absent,
) -> ManifestCompactionResult:
    """Merge the latest snapshot's manifests and commit them as a COMPACT snapshot.

    full forces a full compaction whatever the thresholds (Java's compact_manifest
    procedure); otherwise the table's manifest.* options decide, exactly as at commit time.
    Manifests written by a failed or losing attempt are removed; the table is unchanged on
    any failure.
    """
    if dry_run:
        return plan_manifest_compaction(table, full=full)
    start = time.perf_counter()
    name = str(table.identifier.get_full_name())
    result = ManifestCompactionResult(name, None, None, full, False, None, 0, 0, 0, 0.0)
    latest = table.snapshot_manager().get_latest_snapshot()
    if latest is None:
        return result
    attempts = _Attempts(table, _merge_options(table, full), files or table_files(table))
    try:
        before, outcome = attempts.merge(latest)
    except BaseException:
        attempts.discard()
        raise
    if outcome.mode is None:
        attempts.discard()
        return replace(
            result,
            base_snapshot_id=latest.id,
            manifests_before=before,
            manifests_after=before,
            seconds=time.perf_counter() - start,
        )
    user, ident = new_commit_identity(None, None)
    request = CommitRequest(
        COMPACT,
        lambda _latest: [],
        _require_snapshot,
        user,
        ident,
        attempts.discard,
        base_manifests=attempts.base_for,
    )
    committed = commit_snapshot(table, request, snapshot_writer=snapshot_writer).snapshot
    kept = {m.file_name for m in ManifestListManager(table).read_base(committed)}
    attempts.discard(keep=kept)
    base_id = committed.id - 1
    before, outcome = attempts.outcomes.get(base_id, (before, outcome))
    log.info(
        "compacted manifests of %s (%s): %d -> %d in snapshot %d",
        name,
        outcome.mode,
        before,
        len(outcome.manifests),
        committed.id,
    )
    return replace(
        result,
        snapshot_id=committed.id,
        base_snapshot_id=base_id,
        mode=outcome.mode,
        manifests_before=before,
        manifests_after=len(outcome.manifests),
        rewritten_manifests=outcome.rewritten,
        seconds=time.perf_counter() - start,
    )
