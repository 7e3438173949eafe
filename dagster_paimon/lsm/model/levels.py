"""Sorted runs per (partition, bucket), ordered exactly as Paimon's Levels, and their health."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cmp_to_key
from itertools import pairwise

from pypaimon.manifest.manifest_file_manager import ManifestFileManager
from pypaimon.manifest.manifest_list_manager import ManifestListManager
from pypaimon.manifest.schema.data_file_meta import DataFileMeta
from pypaimon.read.interval_partition import default_key_comparator
from pypaimon.snapshot.snapshot import Snapshot
from pypaimon.table.file_store_table import FileStoreTable

from dagster_paimon.errors import CorruptMetadataError, SnapshotNotFoundError
from dagster_paimon.lsm.model.options import CompactionOptions
from dagster_paimon.lsm.model.runs import LevelSortedRun, SortedRun, run_size

DEFAULT_PARTITION_NAME = "__DEFAULT_PARTITION__"

HEALTH_SNAPSHOT_ID = "paimon/snapshot_id"
HEALTH_FILES = "paimon/files"
HEALTH_TOTAL_BYTES = "paimon/total_bytes"
HEALTH_MAX_SORTED_RUNS = "paimon/max_sorted_runs"
HEALTH_MEAN_SORTED_RUNS = "paimon/mean_sorted_runs"
HEALTH_MAX_SIZE_AMP = "paimon/max_size_amplification_percent"


def _creation_millis(f: DataFileMeta) -> int:
    """Creation time as a sortable number; a missing time sorts first."""
    return f.creation_time.get_millisecond() if f.creation_time is not None else -1


def _level0_order(f: DataFileMeta) -> tuple[int, int, int, str]:
    """Newest flush first, as Java's Levels TreeSet comparator orders level 0."""
    return (-f.max_sequence_number, f.min_sequence_number, _creation_millis(f), f.file_name)


def _sorted_run(level: int, files: list[DataFileMeta]) -> SortedRun:
    """Files of one level >= 1 sorted by min key; overlapping ranges mean corrupt metadata."""
    ordered = sorted(
        files, key=cmp_to_key(lambda a, b: default_key_comparator(a.min_key, b.min_key))
    )
    for left, right in pairwise(ordered):
        if default_key_comparator(left.max_key, right.min_key) >= 0:
            raise CorruptMetadataError(
                f"level {level} files {left.file_name} and {right.file_name} have overlapping "
                "key ranges; a level >= 1 must be one sorted run"
            )
    return SortedRun(files=ordered)


class Levels:
    """One LSM tree: level-0 files plus one sorted run per higher level."""

    def __init__(self, files: Iterable[DataFileMeta], num_levels: int):
        files = list(files)
        restored = max(num_levels, max((f.level for f in files), default=-1) + 1)
        if restored < 2:
            raise ValueError("number of levels must be at least 2")
        self.level0: list[DataFileMeta] = sorted(
            (f for f in files if f.level == 0), key=_level0_order
        )
        self.levels: list[SortedRun] = [
            _sorted_run(level, [f for f in files if f.level == level])
            for level in range(1, restored)
        ]

    def number_of_levels(self) -> int:
        """Level 0 plus every higher level, empty or not."""
        return len(self.levels) + 1

    def max_level(self) -> int:
        """The level full compaction writes to."""
        return len(self.levels)

    def run_of_level(self, level: int) -> SortedRun:
        """The sorted run of a level >= 1 (level 0 has no single run)."""
        if level < 1:
            raise ValueError("level 0 does not have one single sorted run")
        return self.levels[level - 1]

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


def size_amplification_percent(runs: list[LevelSortedRun]) -> float:
    """100 x bytes of all runs but the last / bytes of the last run; 0 below two runs."""
    if len(runs) < 2:
        return 0.0
    last = runs[-1].total_size()
    if last == 0:
        return 0.0
    return 100.0 * sum(r.total_size() for r in runs[:-1]) / last


@dataclass(frozen=True)
class BucketHealth:
    """Metrics of one LSM tree, as the CLI, sensors and asset checks share them."""

    partition: dict[str, str]
    bucket: int
    files: int
    total_bytes: int
    level0_files: int
    sorted_runs: int
    levels: dict[str, int]
    size_amplification_percent: float

    @classmethod
    def of(cls, partition: dict[str, str], bucket: int, levels: Levels) -> BucketHealth:
        """Measure one tree."""
        runs = levels.level_sorted_runs()
        per_level = {"0": len(levels.level0)}
        per_level.update(
            {str(i + 1): len(run.files) for i, run in enumerate(levels.levels) if run.files}
        )
        return cls(
            partition=partition,
            bucket=bucket,
            files=sum(per_level.values()),
            total_bytes=sum(run_size(r.run) for r in runs),
            level0_files=len(levels.level0),
            sorted_runs=levels.number_of_sorted_runs(),
            levels={k: v for k, v in per_level.items() if v},
            size_amplification_percent=round(size_amplification_percent(runs), 2),
        )

    def to_dict(self) -> dict:
        """The JSON shape of DESIGN.md section 6."""
        return {
            "partition": dict(self.partition),
            "bucket": self.bucket,
            "files": self.files,
            "total_bytes": self.total_bytes,
            "level0_files": self.level0_files,
            "sorted_runs": self.sorted_runs,
            "levels": dict(self.levels),
            "size_amplification_percent": self.size_amplification_percent,
        }


@dataclass(frozen=True)
class BucketLevels:
    """The LSM tree of one (partition, bucket) at a snapshot."""

    partition: dict[str, str]
    partition_values: tuple
    bucket: int
    total_buckets: int
    levels: Levels

    def health(self) -> BucketHealth:
        """This tree's metrics."""
        return BucketHealth.of(self.partition, self.bucket, self.levels)


@dataclass(frozen=True)
class TableLevels:
    """Every LSM tree of a table at one snapshot, read from one pass over its manifests."""

    table: str
    snapshot_id: int | None
    options: CompactionOptions
    buckets: list[BucketLevels]

    def health(self) -> TableHealth:
        """Per-bucket metrics and their table-level summary."""
        return TableHealth(self.table, self.snapshot_id, [b.health() for b in self.buckets])


@dataclass(frozen=True)
class TableHealth:
    """Health of every bucket of a table and an aggregate the sensors act on."""

    table: str
    snapshot_id: int | None
    buckets: list[BucketHealth]

    def summary(self) -> dict:
        """Aggregates over buckets; maxima are 0 for an empty table."""
        runs = [b.sorted_runs for b in self.buckets]
        return {
            "buckets": len(self.buckets),
            "files": sum(b.files for b in self.buckets),
            "total_bytes": sum(b.total_bytes for b in self.buckets),
            "level0_files": sum(b.level0_files for b in self.buckets),
            "max_sorted_runs": max(runs, default=0),
            "mean_sorted_runs": round(sum(runs) / len(runs), 2) if runs else 0.0,
            "max_size_amplification_percent": max(
                (b.size_amplification_percent for b in self.buckets), default=0.0
            ),
        }

    def to_metadata(self) -> dict[str, int | float | None]:
        """Flat metrics for orchestration UIs to show and plot."""
        summary = self.summary()
        return {
            HEALTH_SNAPSHOT_ID: self.snapshot_id,
            HEALTH_FILES: summary["files"],
            HEALTH_TOTAL_BYTES: summary["total_bytes"],
            HEALTH_MAX_SORTED_RUNS: summary["max_sorted_runs"],
            HEALTH_MEAN_SORTED_RUNS: summary["mean_sorted_runs"],
            HEALTH_MAX_SIZE_AMP: summary["max_size_amplification_percent"],
        }

    def to_dict(self) -> dict:
        """The JSON shape of DESIGN.md section 6."""
        return {
            "table": self.table,
            "snapshot_id": self.snapshot_id,
            "buckets": [b.to_dict() for b in self.buckets],
            "summary": self.summary(),
        }


def partition_strings(values: Mapping[str, object]) -> dict[str, str]:
    """Partition values as Paimon spells them in paths: null becomes the default name."""
    return {
        k: DEFAULT_PARTITION_NAME if v is None or str(v).strip() == "" else str(v)
        for k, v in values.items()
    }


def resolve_snapshot(table: FileStoreTable, snapshot_id: int | None) -> Snapshot | None:
    """The latest snapshot (None for an empty table) or the given one, which must exist."""
    manager = table.snapshot_manager()
    if snapshot_id is None:
        return manager.get_latest_snapshot()
    snapshot = manager.get_snapshot_by_id(snapshot_id)
    if snapshot is None:
        raise SnapshotNotFoundError(
            f"snapshot {snapshot_id} of {table.identifier.get_full_name()} does not exist "
            "(never written, or expired)"
        )
    return snapshot


def live_entries(
    table: FileStoreTable, snapshot: Snapshot | None, *, with_stats: bool = False
) -> list:
    """Live data-file entries of a snapshot: base + delta manifests with DELETEs applied.

    Value statistics are dropped unless asked for: only commits that re-write entries need them.
    """
    if snapshot is None:
        return []
    try:
        manifests = ManifestListManager(table).read_all(snapshot)
        return ManifestFileManager(table).read_entries_parallel(
            manifests, drop_stats=not with_stats
        )
    except (ValueError, EOFError, KeyError, TypeError, IndexError) as e:
        raise CorruptMetadataError(
            f"cannot read the manifests of snapshot {snapshot.id} of "
            f"{table.identifier.get_full_name()}: {type(e).__name__}: {e}"
        ) from e


def read_levels(
    table: FileStoreTable,
    snapshot_id: int | None = None,
    partition: Mapping[str, str] | None = None,
    *,
    with_stats: bool = False,
) -> TableLevels:
    """Levels of every bucket, optionally only those whose partition matches every given value.

    with_stats keeps value statistics on the files, which compaction needs to re-commit them.
    """
    options = CompactionOptions.from_table_options(table.table_schema.options)
    snapshot = resolve_snapshot(table, snapshot_id)
    wanted = dict(partition or {})
    unknown = sorted(set(wanted) - set(table.partition_keys))
    if unknown:
        raise ValueError(
            f"{unknown} are not partition keys of {table.identifier.get_full_name()} "
            f"(partition keys: {list(table.partition_keys) or 'none'})"
        )
    grouped: dict[tuple, tuple[dict[str, str], tuple, int, list[DataFileMeta]]] = {}
    for entry in live_entries(table, snapshot, with_stats=with_stats):
        strings = partition_strings(entry.partition.to_dict())
        if any(strings[k] != v for k, v in wanted.items()):
            continue
        key = (tuple(strings.values()), entry.bucket)
        values = tuple(entry.partition.values)
        _, _, _, files = grouped.setdefault(key, (strings, values, entry.total_buckets, []))
        files.append(entry.file)
    buckets = [
        BucketLevels(strings, values, key[1], total, Levels(files, options.num_levels))
        for key, (strings, values, total, files) in sorted(grouped.items(), key=lambda kv: kv[0])
    ]
    name = str(table.identifier.get_full_name())
    return TableLevels(name, snapshot.id if snapshot else None, options, buckets)
