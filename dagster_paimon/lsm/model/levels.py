"""Sorted runs per (partition, bucket), ordered exactly as Paimon's Levels."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from dagster_paimon.errors import InternalError, InvalidArgumentError
from dagster_paimon.format.manifest import DataFileMeta
from dagster_paimon.format.metadata import Snapshot
from dagster_paimon.format.schema import TableSchema
from dagster_paimon.format.table import FileStoreTable
from dagster_paimon.io.index import VectorIndex, counted_rows, deleted_rows, deletion_indexes
from dagster_paimon.lsm.model.options import CompactionOptions
from dagster_paimon.lsm.model.runs import LevelSortedRun, SortedRun
from dagster_paimon.partition import Partition
from dagster_paimon.snapshot.collector import collector_paused
from dagster_paimon.snapshot.entries import live_entries, sorted_run_files
from dagster_paimon.snapshot.resolve import resolve_snapshot


def _creation_millis(f: DataFileMeta) -> int:
    """Creation time as a sortable number; a missing time sorts first."""
    return f.creation_time.get_millisecond() if f.creation_time is not None else -1


def _level0_order(f: DataFileMeta) -> tuple[int, int, int, str]:
    """Newest flush first, as Java's Levels TreeSet comparator orders level 0."""
    return (-f.max_sequence_number, f.min_sequence_number, _creation_millis(f), f.file_name)


class Levels:
    """One LSM tree: level-0 files plus one sorted run per higher level."""

    def __init__(self, files: Iterable[DataFileMeta], num_levels: int):
        files = list(files)
        restored = max(num_levels, max((f.level for f in files), default=-1) + 1)
        if restored < 2:
            raise InternalError("number of levels must be at least 2")
        self.level0: list[DataFileMeta] = sorted(
            (f for f in files if f.level == 0), key=_level0_order
        )
        self.levels: list[SortedRun] = [
            SortedRun(files=sorted_run_files(level, [f for f in files if f.level == level]))
            for level in range(1, restored)
        ]

    def number_of_levels(self) -> int:
        """Level 0 plus every higher level, empty or not."""
        return len(self.levels) + 1

    def max_level(self) -> int:
        """The level full compaction writes to."""
        return len(self.levels)

    def level_sorted_runs(self) -> list[LevelSortedRun]:
        """Each level-0 file as its own run, then the non-empty levels ascending."""
        runs = [LevelSortedRun(0, SortedRun(files=[f])) for f in self.level0]
        runs.extend(LevelSortedRun(i + 1, run) for i, run in enumerate(self.levels) if run.files)
        return runs

    def number_of_sorted_runs(self) -> int:
        """What the compaction trigger and the writer's stop trigger count."""
        return len(self.level0) + sum(1 for run in self.levels if run.files)

    def non_empty_highest_level(self) -> int:
        """Highest non-empty level >= 1; 0 if only level 0 has files; -1 if empty."""
        for i in range(len(self.levels) - 1, -1, -1):
            if self.levels[i].files:
                return i + 1
        return 0 if self.level0 else -1

    def all_files(self) -> list[DataFileMeta]:
        """Every file, in sorted-run order."""
        return [f for r in self.level_sorted_runs() for f in r.run.files]


@dataclass(frozen=True)
class BucketLevels:
    """The LSM tree of one (partition, bucket) at a snapshot."""

    partition: Partition
    bucket: int
    total_buckets: int
    levels: Levels
    dv_index: VectorIndex | None = None
    deleted: Mapping[str, int] | None = None

    def deleted_rows(self) -> dict[str, int]:
        """Rows deletion vectors mark, per data file of the bucket (`deleted` when counted from
        the vectors themselves, else the index metadata's counts)."""
        return dict(self.deleted) if self.deleted is not None else deleted_rows(self.dv_index)


@dataclass(frozen=True)
class TableLevels:
    """Every bucket of a table at one snapshot, read from one pass over its manifests: LSM
    trees, or an append table's buckets (all their files at level 0)."""

    table: str
    snapshot_id: int | None
    options: CompactionOptions
    buckets: list[BucketLevels]
    schemas: Mapping[int, TableSchema] = field(default_factory=dict)

    @property
    def schema(self) -> TableSchema | None:
        """The table's current schema."""
        return self.schemas[max(self.schemas)] if self.schemas else None


def check_partition_keys(table: FileStoreTable, spec: Mapping[str, str]) -> None:
    """Refuse a partition spec naming a column that is not a partition key of the table."""
    unknown = sorted(set(spec) - set(table.partition_keys))
    if unknown:
        raise InvalidArgumentError(
            f"{unknown} are not partition keys of {table.identifier.get_full_name()} "
            f"(partition keys: {list(table.partition_keys) or 'none'})"
        )


def read_levels(
    table: FileStoreTable,
    snapshot_id: int | None = None,
    partition: Mapping[str, str] | None = None,
    *,
    with_stats: bool = False,
) -> TableLevels:
    """Levels of every bucket, optionally only those whose partition matches every given value.

    with_stats keeps value statistics on the files, which compaction needs to re-commit them.

    Raises InvalidArgumentError (a partition key the table lacks), SnapshotNotFoundError,
    InvalidOptionError (a malformed table option).
    """
    return levels_at(table, resolve_snapshot(table, snapshot_id), partition, with_stats=with_stats)


def levels_at(
    table: FileStoreTable,
    snapshot: Snapshot | None,
    partition: Mapping[str, str] | None = None,
    *,
    with_stats: bool = False,
) -> TableLevels:
    """Levels as of a snapshot already read (None: an empty table); see read_levels."""
    options = CompactionOptions.from_table_options(table.table_schema.options)
    wanted = dict(partition or {})
    check_partition_keys(table, wanted)
    with collector_paused():
        return _levels(table, snapshot, options, wanted, with_stats)


def _levels(
    table: FileStoreTable,
    snapshot: Snapshot | None,
    options: CompactionOptions,
    wanted: Mapping[str, str],
    with_stats: bool,
) -> TableLevels:
    """levels_at, once its arguments are checked."""
    grouped: dict[tuple[Partition, int], tuple[int, list[DataFileMeta]]] = {}
    for entry in live_entries(table, snapshot, with_stats=with_stats):
        part = Partition.of_row(entry.partition)
        if not part.matches(wanted):
            continue
        _, files = grouped.setdefault((part, entry.bucket), (entry.total_buckets, []))
        files.append(entry.file)
    indexes = deletion_indexes(table, snapshot)
    buckets = [
        BucketLevels(
            part,
            bucket,
            total,
            Levels(files, options.num_levels),
            indexes.get((part, bucket)),
            counted_rows(table, part, bucket, indexes.get((part, bucket))),
        )
        for (part, bucket), (total, files) in sorted(
            grouped.items(), key=lambda kv: (tuple(kv[0][0].spec.values()), kv[0][1])
        )
    ]
    name = str(table.identifier.get_full_name())
    schemas = {table.table_schema.id: table.table_schema}
    for b in buckets:
        for f in b.levels.all_files():
            if f.schema_id not in schemas:
                schemas[f.schema_id] = table.schema_manager.get_schema(f.schema_id)
    return TableLevels(name, snapshot.id if snapshot else None, options, buckets, schemas)
