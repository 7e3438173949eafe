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

Each task rewrites its files in this order, numbering rows from the first file's
minSequenceNumber (BaseAppendFileStoreWrite.compactRewrite). Planning reads metadata only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pypaimon.manifest.schema.data_file_meta import DataFileMeta

from dagster_paimon.lsm.model.levels import BucketLevels, TableLevels
from dagster_paimon.options import (
    FILE_NUM_LIMIT,
    FORCE_REWRITE_ALL_FILES,
    MIN_FILE_NUM,
    SMALL_FILE_RATIO,
    SPLIT_OPEN_FILE_COST,
    TARGET_FILE_SIZE,
    at_least,
    bucket,
    flag,
    memory_bytes,
    ratio,
    read_option,
)
from dagster_paimon.partition import Partition

APPEND_TARGET_FILE_SIZE = 256 * 1024 * 1024
OPEN_FILE_COST = 4 * 1024 * 1024
FULL_COMPACT_MIN_FILE = 3
UNAWARE_BUCKET = -1


@dataclass(frozen=True)
class AppendOptions:
    """What append compaction reads from table options, defaults as in CoreOptions.java."""

    target_file_size: int = APPEND_TARGET_FILE_SIZE
    small_file_ratio: float = 0.7
    min_file_num: int = 5
    file_num_limit: int = 100_000
    open_file_cost: int = OPEN_FILE_COST
    force_rewrite_all_files: bool = False

    @classmethod
    def from_table_options(cls, options: Mapping[str, str]) -> AppendOptions:
        """Parse table options; bad values raise InvalidOptionError."""
        return cls(
            target_file_size=read_option(
                options, TARGET_FILE_SIZE, memory_bytes, APPEND_TARGET_FILE_SIZE
            ),
            small_file_ratio=read_option(options, SMALL_FILE_RATIO, ratio, 0.7),
            min_file_num=read_option(options, MIN_FILE_NUM, at_least(1), 5),
            file_num_limit=read_option(options, FILE_NUM_LIMIT, at_least(1), 100_000),
            open_file_cost=read_option(options, SPLIT_OPEN_FILE_COST, memory_bytes, OPEN_FILE_COST),
            force_rewrite_all_files=flag(options, FORCE_REWRITE_ALL_FILES),
        )

    @property
    def compaction_file_size(self) -> int:
        """Files below this size are small (CoreOptions.compactionFileSize)."""
        return int(self.target_file_size * self.small_file_ratio)


@dataclass(frozen=True)
class AppendTask:
    """Files of one bucket (unaware: bucket 0 of a partition) rewritten, in this order."""

    partition: Partition
    bucket: int
    total_buckets: int
    files: tuple[DataFileMeta, ...]

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


def pick_bucketed_full(files: Sequence[DataFileMeta], options: AppendOptions) -> list[DataFileMeta]:
    """BucketedAppendCompactManager.FullCompactTask without deletion vectors."""
    ordered = sorted(files, key=_sequence_order)
    force = options.force_rewrite_all_files
    if not force and len(ordered) < FULL_COMPACT_MIN_FILE:
        return []
    small_size = options.compaction_file_size
    while not force and ordered and ordered[0].file_size >= small_size:
        ordered.pop(0)
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


def _bucketed_task(tree: BucketLevels, options: AppendOptions, full: bool) -> AppendTask | None:
    """One bucket's task, if its manager would compact now."""
    files = tree.levels.all_files()
    picked = pick_bucketed_full(files, options) if full else pick_bucketed(files, options)
    if not picked:
        return None
    return AppendTask(tree.partition, tree.bucket, tree.total_buckets, tuple(picked))


def _unaware_tasks(levels: TableLevels, options: AppendOptions) -> list[AppendTask]:
    """The coordinator's tasks over every partition's small files (up to the file-num limit)."""
    small_size = options.compaction_file_size
    remaining = options.file_num_limit
    tasks = []
    for tree in levels.buckets:
        small = [f for f in tree.levels.all_files() if f.file_size < small_size][:remaining]
        remaining -= len(small)
        tasks += [
            AppendTask(tree.partition, tree.bucket, tree.total_buckets, tuple(b))
            for b in pack_unaware(small, options)
        ]
        if remaining <= 0:
            break
    return tasks


def plan_append_tasks(
    levels: TableLevels, table_options: Mapping[str, str], *, full: bool = False
) -> tuple[AppendTask, ...]:
    """Every task Paimon would run on the append table `levels` reads (unaware: full or not,
    the coordinator packs small files alike)."""
    options = AppendOptions.from_table_options(table_options)
    if bucket(table_options) == UNAWARE_BUCKET:
        return tuple(_unaware_tasks(levels, options))
    return tuple(t for b in levels.buckets if (t := _bucketed_task(b, options, full)))
