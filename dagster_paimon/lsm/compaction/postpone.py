"""Postpone buckets (`bucket` = -2): compaction moves each partition's parked rows into buckets.

Paimon's postpone writers park unsorted level-0 files in `bucket-postpone`, where readers do not
look. Its compaction (PostponeUtils, Flink's postpone compact job, SparkPostponeCompactProcedure):
- gives each partition a bucket count: the count its real buckets already have, else
  `postpone.default-bucket-num`, else an estimate from the parked rows
  (`postpone.target-row-num-per-bucket`) or bytes (`postpone.target-size-per-bucket`, 1 gb);
- replays the parked files unmerged, one writer's files in creation-time order, through a normal
  writer restored at the base snapshot: rows are hashed into buckets and flushed as level-0
  files whose sequence numbers continue each bucket's maximum;
- compacts the buckets written as a writer's compaction would, and commits one COMPACT snapshot
  that deletes the parked files; new files compacted away in the same run are never committed
  (BucketFiles).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from dagster_paimon.commit.changes import BucketChange
from dagster_paimon.errors import CorruptMetadataError, InvalidOptionError
from dagster_paimon.format.manifest import DataFileMeta
from dagster_paimon.format.schema import TableSchema
from dagster_paimon.format.table import FileStoreTable
from dagster_paimon.io.kv import VALUE_KIND, value_schema
from dagster_paimon.io.paths import delete_data_files
from dagster_paimon.io.read import read_file
from dagster_paimon.lsm.compaction.executor import Work
from dagster_paimon.lsm.compaction.task import CompactResult
from dagster_paimon.lsm.model.levels import BucketLevels, Levels
from dagster_paimon.lsm.write.bucket import assign_buckets, check_bucket_function
from dagster_paimon.lsm.write.layout import plan_write_layout
from dagster_paimon.lsm.write.level0 import BucketWrite, Level0Writer
from dagster_paimon.options import (
    CHANGELOG_PRODUCER,
    POSTPONE_BUCKET,
    POSTPONE_DEFAULT_BUCKET_NUM,
    POSTPONE_TARGET_ROW_NUM,
    POSTPONE_TARGET_SIZE,
    at_least,
    changelog_producer,
    memory_bytes,
    read_option,
)
from dagster_paimon.partition import Partition

log = logging.getLogger(__name__)

WRITER_MARK = "-w-"
REPLAY_BATCH_ROWS = 64 * 1024
DEFAULT_TARGET_SIZE = 1 << 30


def writer_prefix(file_name: str) -> str:
    """The name prefix every file of one postpone writer shares (Java's getWriterPrefix)."""
    cut = file_name.rfind(WRITER_MARK)
    if cut < 0:
        raise CorruptMetadataError(
            f"postpone-bucket file {file_name} does not follow Paimon's postpone writer naming "
            f"(no {WRITER_MARK!r}): its writer, hence the order of its rows, is unknown"
        )
    return file_name[: cut + len(WRITER_MARK)]


def _creation_millis(meta: DataFileMeta) -> int:
    """A file's creation time; a missing one sorts first."""
    return meta.creation_time.get_millisecond() if meta.creation_time is not None else -1


def replay_order(files: Iterable[DataFileMeta]) -> tuple[DataFileMeta, ...]:
    """Each writer's files by creation time; writers in the order of their first file.

    Java orders one writer's files and leaves writers unordered among themselves; ordering them
    by their first file keeps separate commits (pypaimon uses a new writer per commit) in
    commit order.
    """
    by_writer: dict[str, list[DataFileMeta]] = {}
    for meta in files:
        by_writer.setdefault(writer_prefix(meta.file_name), []).append(meta)
    groups = [
        sorted(group, key=lambda f: (_creation_millis(f), f.min_sequence_number, f.file_name))
        for group in by_writer.values()
    ]
    groups.sort(key=lambda g: (_creation_millis(g[0]), g[0].file_name))
    return tuple(f for group in groups for f in group)


def _per_bucket(value: int, target: int) -> int:
    """Java's computeBucketNum: ceil(value / target), at least 1."""
    return 1 if value <= 0 else (value - 1) // target + 1


def bucket_count(
    partition: Partition,
    real: Sequence[BucketLevels],
    parked: Sequence[DataFileMeta],
    options: Mapping[str, str],
) -> int:
    """The partition's real bucket count, as PostponeUtils resolves it."""
    known = {b.total_buckets for b in real if b.total_buckets > 0}
    if len(known) > 1:
        raise CorruptMetadataError(
            f"partition {partition.label()} has files of different bucket counts {sorted(known)}"
        )
    if known:
        return known.pop()
    # PostponeUtils.determineBucketNum: the row target first, then the default bucket number
    rows = read_option(options, POSTPONE_TARGET_ROW_NUM, at_least(1), None)
    if rows is not None:
        return _per_bucket(sum(f.row_count for f in parked), rows)
    default = read_option(options, POSTPONE_DEFAULT_BUCKET_NUM, at_least(1), None)
    if default is not None:
        return default
    size = read_option(options, POSTPONE_TARGET_SIZE, memory_bytes, DEFAULT_TARGET_SIZE)
    if size <= 0:
        raise InvalidOptionError(f"table option '{POSTPONE_TARGET_SIZE}' must be greater than 0")
    return _per_bucket(sum(f.file_size for f in parked), size)


def check_movable(schema: TableSchema, parked: Sequence[BucketLevels]) -> None:
    """Refuse postpone layouts whose move we would not reproduce exactly."""
    check_bucket_function(schema)
    if changelog_producer(schema.options) == "input":
        raise InvalidOptionError(
            f"table option '{CHANGELOG_PRODUCER}' is 'input' on a postpone-bucket table: moving "
            "rows into real buckets would also have to write input changelog files, which "
            "dagster-paimon does not write; nothing was changed"
        )
    with_vectors = [b.partition.label() for b in parked if b.dv_index is not None]
    if with_vectors:
        raise InvalidOptionError(
            f"postpone-bucket files of partitions {with_vectors} have deletion vectors, which "
            "Paimon's postpone writers never produce; nothing was changed"
        )


@dataclass(frozen=True)
class PostponeMove:
    """One partition's parked files and where their rows go: the partition's real buckets."""

    parked: BucketLevels
    num_buckets: int
    real: tuple[BucketLevels, ...]

    @classmethod
    def of(
        cls, parked: BucketLevels, real: Sequence[BucketLevels], options: Mapping[str, str]
    ) -> PostponeMove:
        """The move of one postpone bucket, with the partition's bucket count resolved."""
        files = parked.levels.all_files()
        count = bucket_count(parked.partition, real, files, options)
        return cls(parked, count, tuple(real))

    @property
    def partition(self) -> Partition:
        """The partition whose rows move."""
        return self.parked.partition

    @property
    def files(self) -> tuple[DataFileMeta, ...]:
        """The parked files in replay order."""
        return replay_order(self.parked.levels.all_files())

    @property
    def rows(self) -> int:
        """Rows parked (before any merging)."""
        return sum(f.row_count for f in self.files)

    def base_sequences(self) -> dict[tuple[Partition, int], int]:
        """Each real bucket's largest sequence number: the move continues after it."""
        return {
            (self.partition, b.bucket): max(
                (f.max_sequence_number for f in b.levels.all_files()), default=-1
            )
            for b in self.real
        }

    def removal(self) -> BucketChange:
        """The parked files, deleted by the commit."""
        return BucketChange(
            self.partition, POSTPONE_BUCKET, self.parked.total_buckets, deleted=self.files
        )

    def to_dict(self) -> dict[str, Any]:
        """The move as the compaction JSON reports it."""
        return {
            "partition": self.partition.spec,
            "postponed_files": len(self.files),
            "postponed_rows": self.rows,
            "buckets": self.num_buckets,
        }

    def targets(self, writes: Sequence[BucketWrite], num_levels: int) -> list[BucketLevels]:
        """Every real bucket of the partition after the move, new level-0 files included."""
        new = {w.bucket: w.files for w in writes}
        real = {b.bucket: b for b in self.real}
        targets = []
        for bucket in sorted(set(real) | set(new)):
            base = real.get(bucket)
            files = [*(base.levels.all_files() if base else ()), *new.get(bucket, ())]
            targets.append(
                BucketLevels(
                    self.partition,
                    bucket,
                    self.num_buckets,
                    Levels(files, num_levels),
                    base.dv_index if base else None,
                    base.deleted if base else None,
                )
            )
        return targets


def place_rows(table: FileStoreTable, move: PostponeMove) -> tuple[BucketWrite, ...]:
    """Replay one partition's parked rows into level-0 files of its real buckets."""
    schema = table.table_schema
    values = value_schema(schema)
    writer = Level0Writer(
        table,
        plan_write_layout(schema, values),
        move.base_sequences(),
        num_buckets=move.num_buckets,
    )
    columns = [*values.names, VALUE_KIND]
    try:
        for meta in move.files:
            for batch in read_file(
                table, move.partition, POSTPONE_BUCKET, meta, REPLAY_BATCH_ROWS, columns=columns
            ):
                rows = batch.select(values.names)
                kinds = np.asarray(batch.column(VALUE_KIND)).astype(np.int8)
                writer.write_rows(rows, kinds, assign_buckets(schema, rows, move.num_buckets))
        writes = tuple(writer.finish())
    except BaseException:
        writer.abort()
        raise
    log.info(
        "moved %d postponed rows of %s from %d files into %d of its %d buckets",
        writer.rows,
        move.partition.label(),
        len(move.files),
        len(writes),
        move.num_buckets,
    )
    return writes


def discard_placed(table: FileStoreTable, placed: Sequence[tuple[BucketWrite, ...]]) -> None:
    """Delete the level-0 files of moves that succeeded when a sibling failed."""
    for writes in placed:
        for w in writes:
            delete_data_files(table, w.partition, w.bucket, w.files)


PLACEMENT: Work[PostponeMove, tuple[BucketWrite, ...]] = Work(
    "postponed partitions", place_rows, discard_placed
)


def absorb(write: BucketWrite, change: BucketChange) -> tuple[BucketChange, list[DataFileMeta]]:
    """A bucket's compaction change with the move's level-0 files folded in (BucketFiles).

    New files the compaction replaced are never committed: they are returned for deletion
    (an upgraded file keeps its name and stays).
    """
    new = {f.file_name for f in write.files}
    kept = {f.file_name for f in change.added}
    consumed = {f.file_name for f in change.deleted if f.file_name in new}
    merged = replace(
        change,
        deleted=tuple(f for f in change.deleted if f.file_name not in new),
        added=(*(f for f in write.files if f.file_name not in consumed), *change.added),
        new_files=(*write.files, *change.new_files),
    )
    garbage = [f for f in write.files if f.file_name in consumed and f.file_name not in kept]
    return merged, garbage


def moved_changes(
    table: FileStoreTable,
    moves: Sequence[PostponeMove],
    placed: Sequence[tuple[BucketWrite, ...]],
    results: Sequence[CompactResult],
) -> list[BucketChange]:
    """The commit's changes of every move: parked files deleted, each real bucket's new files
    folded into its compaction result (`results`: the tasks of the moved partitions).

    Level-0 files a compaction already replaced are deleted here: no snapshot ever names them.
    """
    changes = [m.removal() for m in moves]
    writes = {
        (w.partition, w.bucket): (w, m.num_buckets)
        for m, ws in zip(moves, placed, strict=True)
        for w in ws
    }
    for result in results:
        change = result.change
        found = writes.pop((change.partition, change.bucket), None)
        if found is None:
            changes.append(change)
            continue
        merged, garbage = absorb(found[0], change)
        delete_data_files(table, change.partition, change.bucket, garbage)
        changes.append(merged)
    changes.extend(write.change(count) for write, count in writes.values())
    return changes
