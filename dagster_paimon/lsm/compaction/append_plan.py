"""Which files of an append table (no primary key) Paimon 2.0 compacts, and into which tasks.

Bucketed tables (bucket > 0): BucketedAppendCompactManager per bucket. Its best-effort pick
walks the bucket's files by minSequenceNumber and takes the first window of
`compaction.min.file-num` consecutive files whose size stays below 2 * target-file-size (the
window slides past a file when it reaches that size); full compaction drops leading files of at
least target-file-size * `compaction.small-file-ratio` and rewrites the rest when small files
outnumber big ones and at least 3 remain (or with `compaction.force-rewrite-all-files`).

Unaware-bucket tables (bucket = -1): AppendCompactCoordinator per partition, in batch mode.
Files below the small-file size (at most `compaction.file-num-limit` of them) are sorted by size
and bin-packed: a bin of more than one file is a task once its size (each file counted with
`source.split.open-file-cost` more) reaches 2 * target-file-size; the last bin is one if it
holds `compaction.min.file-num` files. (Paimon 0.9/1.0 packed differently: target-file-size
once and `compaction.max.file-num`; either way the rows are the same.)

With `deletion-vectors.enabled`, a bucketed full compaction keeps leading big files only when
they have no deletion vector and rewrites the rest, however few; unaware-bucket candidates also
include files whose deleted rows pass `compaction.delete-ratio-threshold` of their rows, the
files with vectors are grouped by the index file holding their vectors and the groups go into
bins of their own (the last bin always a task), the others are packed as before when there are
at least two (AppendCompactCoordinator.packInDeletionVectorVMode). A task drops the rows its
files' vectors mark and the vectors with them: a bucket's index files are replaced by one
(BucketedDvMaintainer); an unaware-bucket partition's files holding the task's vectors are
replaced by one holding their other vectors (none if none are left) and its other index files
are kept (AppendDeleteFileMaintainer; Java writes one file per touched file).

Each task rewrites its files in this order, numbering rows from the first file's
minSequenceNumber (BaseAppendFileStoreWrite.compactRewrite). Planning reads metadata only.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dagster_paimon.format.manifest import DataFileMeta
from dagster_paimon.io.index import VectorIndex
from dagster_paimon.lsm.model.append_options import AppendOptions
from dagster_paimon.lsm.model.levels import BucketLevels, TableLevels
from dagster_paimon.partition import Partition

FULL_COMPACT_MIN_FILE = 3


@dataclass(frozen=True)
class AppendTask:
    """Files of one bucket (unaware: bucket 0 of a partition) rewritten, in this order;
    `dv_index` is the bucket's deletion-vector index the task applies and rewrites."""

    partition: Partition
    bucket: int
    total_buckets: int
    files: tuple[DataFileMeta, ...]
    dv_index: VectorIndex | None = None

    @property
    def first_sequence(self) -> int:
        """Where the rewritten rows' numbering starts."""
        return self.files[0].min_sequence_number

    @property
    def rewritten_bytes(self) -> int:
        """Bytes the task reads."""
        return sum(f.file_size for f in self.files)

    def to_dict(self) -> dict[str, Any]:
        """The per-unit JSON of `dagster-paimon compact`, as a primary-key task's."""
        return {
            "partition": self.partition.spec,
            "bucket": self.bucket,
            "output_level": 0,
            "drop_delete": False,
            "input_files": len(self.files),
            "rewritten_files": len(self.files),
            "upgraded_files": 0,
            "input_bytes": self.rewritten_bytes,
            "rewritten_bytes": self.rewritten_bytes,
            "input_file_names": [f.file_name for f in self.files],
            "rewrite_groups": [[f.file_name for f in self.files]],
            "upgraded_file_names": [],
            "changelog_groups": 0,
            "scanned_upgrades": 0,
        }


def _sequence_order(f: DataFileMeta) -> tuple[int, int, str]:
    """The bucket's PriorityQueue order. Java leaves ties in heap order; pypaimon numbers every
    append file from 1, so ties go by creation time (write order), then name."""
    created = f.creation_time.get_millisecond() if f.creation_time is not None else -1
    return f.min_sequence_number, created, f.file_name


def pick_bucketed(files: Sequence[DataFileMeta], options: AppendOptions) -> list[DataFileMeta]:
    """BucketedAppendCompactManager.pickCompactBefore: the first window of min-file-num files."""
    window: list[DataFileMeta] = []
    total = 0
    for file in sorted(files, key=_sequence_order):
        window.append(file)
        total += file.file_size
        if len(window) >= options.min_file_num:
            return window
        if total >= options.target_file_size * 2:
            total -= window.pop(0).file_size
    return []


def pick_bucketed_full(
    files: Sequence[DataFileMeta], options: AppendOptions, with_vectors: Collection[str] = ()
) -> list[DataFileMeta]:
    """BucketedAppendCompactManager.FullCompactTask; `with_vectors` names the files that have a
    deletion vector (only with deletion vectors enabled)."""
    ordered = sorted(files, key=_sequence_order)
    force = options.force_rewrite_all_files
    if not force and len(ordered) < FULL_COMPACT_MIN_FILE and not options.deletion_vectors:
        return []
    small_size = options.compaction_file_size
    while (
        not force
        and ordered
        and ordered[0].file_size >= small_size
        and ordered[0].file_name not in with_vectors
    ):
        ordered.pop(0)
    if options.deletion_vectors:
        return ordered
    small = sum(1 for f in ordered if f.file_size < small_size)
    if force or (small > len(ordered) - small and len(ordered) >= FULL_COMPACT_MIN_FILE):
        return ordered
    return []


def pack_unaware(files: Sequence[DataFileMeta], options: AppendOptions) -> list[list[DataFileMeta]]:
    """AppendCompactCoordinator.SubCoordinator.pack: small files bin-packed by size."""
    bins: list[list[DataFileMeta]] = []
    current: list[DataFileMeta] = []
    total = 0
    for file in sorted(files, key=lambda f: (f.file_size, f.file_name)):
        current.append(file)
        total += file.file_size + options.open_file_cost
        if len(current) > 1 and total >= options.target_file_size * 2:
            bins.append(current)
            current, total = [], 0
    if current and len(current) >= options.min_file_num:
        bins.append(current)
    return bins


def pack_unaware_vectors(
    files: Sequence[DataFileMeta], options: AppendOptions, holders: Mapping[str, str]
) -> list[list[DataFileMeta]]:
    """SubCoordinator.packInDeletionVectorVMode: the files with vectors grouped by the index
    file holding them (`holders`), so that no two tasks rewrite one index file; the groups,
    smallest first, fill bins as pack does and the last bin is a task however small; the other
    files are packed when there are at least two."""
    groups: dict[str, list[DataFileMeta]] = {}
    for f in files:
        if f.file_name in holders:
            groups.setdefault(holders[f.file_name], []).append(f)
    bins: list[list[DataFileMeta]] = []
    current: list[DataFileMeta] = []
    total = 0
    for name in sorted(groups, key=lambda n: (sum(f.file_size for f in groups[n]), n)):
        group = sorted(groups[name], key=lambda f: (f.file_size, f.file_name))
        current += group
        total += sum(f.file_size + options.open_file_cost for f in group)
        if len(current) > 1 and total >= options.target_file_size * 2:
            bins.append(current)
            current, total = [], 0
    if current:
        bins.append(current)
    rest = [f for f in files if f.file_name not in holders]
    return bins + (pack_unaware(rest, options) if len(rest) > 1 else [])


def too_many_deleted(file: DataFileMeta, index: VectorIndex | None, threshold: float) -> bool:
    """AppendCompactCoordinator.tooHighDeleteRatio: a file's vector marks more than the
    threshold of its rows (or does not say how many)."""
    meta = index.ranges.get(file.file_name) if index is not None else None
    if meta is None:
        return False
    return meta.cardinality is None or meta.cardinality > file.row_count * threshold


def _vector_files(tree: BucketLevels, options: AppendOptions) -> frozenset[str]:
    """The files of a bucket that have a deletion vector (none unless vectors are enabled)."""
    if not options.deletion_vectors or tree.dv_index is None:
        return frozenset()
    return frozenset(tree.dv_index.ranges)


def _task(
    tree: BucketLevels, files: Sequence[DataFileMeta], options: AppendOptions, *, unaware: bool
) -> AppendTask:
    """A task over files of the bucket, carrying the index files it rewrites when one of its
    files has a vector: a bucket's every index file (BucketedDvMaintainer), an unaware-bucket
    partition's those holding its files' vectors (AppendDeleteFileMaintainer)."""
    if not options.deletion_vectors or tree.dv_index is None:
        return AppendTask(tree.partition, tree.bucket, tree.total_buckets, tuple(files))
    holders = tree.dv_index.holders
    touched = {holders[f.file_name] for f in files if f.file_name in holders}
    index = None
    if touched:
        index = tree.dv_index.of(touched) if unaware else tree.dv_index
    return AppendTask(tree.partition, tree.bucket, tree.total_buckets, tuple(files), index)


def _bucketed_task(tree: BucketLevels, options: AppendOptions, full: bool) -> AppendTask | None:
    """One bucket's task, if its manager would compact now."""
    files = tree.levels.all_files()
    picked = (
        pick_bucketed_full(files, options, _vector_files(tree, options))
        if full
        else pick_bucketed(files, options)
    )
    return _task(tree, picked, options, unaware=False) if picked else None


def _unaware_tasks(levels: TableLevels, options: AppendOptions) -> list[AppendTask]:
    """The coordinator's tasks over every partition's candidates (up to the file-num limit):
    small files, and with vectors files too many of whose rows are deleted."""
    small_size = options.compaction_file_size
    remaining = options.file_num_limit
    tasks = []
    for tree in levels.buckets:
        index = tree.dv_index if options.deletion_vectors else None
        candidates = [
            f
            for f in tree.levels.all_files()
            if f.file_size < small_size
            or too_many_deleted(f, index, options.delete_ratio_threshold)
        ][:remaining]
        remaining -= len(candidates)
        bins = (
            pack_unaware_vectors(candidates, options, index.holders if index else {})
            if options.deletion_vectors
            else pack_unaware(candidates, options)
        )
        tasks += [_task(tree, b, options, unaware=True) for b in bins]
        if remaining <= 0:
            break
    return tasks


def plan_append_tasks(
    levels: TableLevels, options: AppendOptions, *, full: bool = False
) -> tuple[AppendTask, ...]:
    """Every task Paimon would run on the append table `levels` reads (unaware: full or not,
    the coordinator packs small files alike)."""
    if options.unaware:
        return tuple(_unaware_tasks(levels, options))
    return tuple(t for b in levels.buckets if (t := _bucketed_task(b, options, full)))
