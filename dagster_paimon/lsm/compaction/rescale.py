"""Rescale: rewrite a fixed-bucket table's (or some partitions') rows into a new bucket count.

Java 2.0's Spark `rescale` procedure (RescaleProcedure) reads the real buckets of the chosen
partitions at the latest snapshot, merged, writes them through a copy of the table whose `bucket`
option is the new count (the table's schema is not altered: the files record the new count as
their manifest entries' `_TOTAL_BUCKETS`, which Java's writers restore per partition), and commits
ONE OVERWRITE snapshot of those partitions with `commit.strict-mode.last-safe-snapshot` set to
the snapshot it read: the commit fails if another writer changed those partitions since.
The partitions are chosen as that procedure's `partitions` argument chooses them: specs ORed,
each an AND of column = value (Flink's procedure takes one spec). Its `where` argument, any
Spark SQL predicate over partition columns, is not offered: we would not evaluate it exactly.

Here each source bucket is one task (the compaction TaskExecutor runs them, locally or on Spark):
its sorted runs are merged as a full compaction merges them (merge engine, deletion vectors,
record-level expiry; deletes dropped) and the merged rows hashed into level-0 files of the new
buckets. Keys never share two source buckets, so the files one target bucket gets from several
tasks hold disjoint keys; a second task per target bucket merges them into one sorted run at the
top level (a single file is only moved there), where every reader reads it (deletion-vector
tables never read level 0) with no changelog written: the rows did not change. The
intermediate level-0 files are deleted before the commit. The commit is the OverwriteProducer's,
checked as strict mode checks it: the live files of the rescaled partitions must still be
exactly those the rescale read.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, ClassVar

import numpy as np

from dagster_paimon.commit.changes import BucketChange
from dagster_paimon.commit.producers import OverwriteProducer
from dagster_paimon.errors import (
    CommitConflictError,
    InvalidArgumentError,
    PartitionNotFoundError,
    UnsupportedLayoutError,
    transient_errors,
)
from dagster_paimon.format.manifest import DataFileMeta, ManifestEntry
from dagster_paimon.format.metadata import Snapshot
from dagster_paimon.format.table import FileStoreTable
from dagster_paimon.io.kv import VALUE_KIND, value_schema
from dagster_paimon.io.paths import delete_data_files
from dagster_paimon.lsm.compaction.compact import check_supported, compaction_job_options
from dagster_paimon.lsm.compaction.executor import LocalExecutor, TaskExecutor, Work
from dagster_paimon.lsm.compaction.plan import RewriteGroup, TaskPlan
from dagster_paimon.lsm.compaction.postpone import discard_placed
from dagster_paimon.lsm.compaction.rewriter import MERGE, Rewriter
from dagster_paimon.lsm.compaction.task import TaskRun
from dagster_paimon.lsm.merge.kway import MergeStats
from dagster_paimon.lsm.model.levels import (
    BucketLevels,
    TableLevels,
    check_partition_keys,
    read_levels,
)
from dagster_paimon.lsm.model.runs import SortedRun
from dagster_paimon.lsm.write.bucket import assign_buckets, fixed_bucket_count
from dagster_paimon.lsm.write.layout import plan_write_layout
from dagster_paimon.lsm.write.level0 import BucketWrite, Level0Writer
from dagster_paimon.options import DYNAMIC_BUCKET, POSTPONE_BUCKET, bucket
from dagster_paimon.partition import Partition
from dagster_paimon.results import DETAIL, METRIC, Reported, run_planned
from dagster_paimon.table import TableRef
from dagster_paimon.unsupported import COMPACTION, check_supported_layout

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RescaleTask:
    """One source bucket: its full merge (a TaskPlan rewriting every run) and the new count."""

    plan: TaskPlan
    num_buckets: int


def rescale_bucket(table: FileStoreTable, task: RescaleTask) -> tuple[BucketWrite, ...]:
    """Merge one source bucket and write its rows into level-0 files of the new buckets."""
    schema = table.table_schema
    values = value_schema(schema)
    run = TaskRun(table, task.plan, MergeStats())
    writer = Level0Writer(
        table, plan_write_layout(schema, values), {}, num_buckets=task.num_buckets
    )
    try:
        for group in task.plan.rewrites:
            for batch in run.merged(group, None):
                if not batch.num_rows:
                    continue
                rows = batch.select(values.names)
                kinds = np.asarray(batch.column(VALUE_KIND)).astype(np.int8)
                writer.write_rows(rows, kinds, assign_buckets(schema, rows, task.num_buckets))
        writes = tuple(writer.finish())
    except BaseException:
        writer.abort()
        raise
    log.info(
        "rescaled %s bucket %d: %d rows into %d of %d buckets",
        task.plan.partition.label(),
        task.plan.bucket,
        writer.rows,
        len(writes),
        task.num_buckets,
    )
    return writes


RESCALE: Work[RescaleTask, tuple[BucketWrite, ...]] = Work(
    "source buckets", rescale_bucket, discard_placed
)


@dataclass(frozen=True)
class TargetMerge:
    """One new bucket's level-0 files (disjoint keys), merged into one run at `output_level`."""

    partition: Partition
    bucket: int
    num_buckets: int
    files: tuple[DataFileMeta, ...]
    output_level: int


def merge_target(table: FileStoreTable, task: TargetMerge) -> tuple[BucketWrite, ...]:
    """Merge one new bucket's level-0 files into one sorted run at the output level."""
    group = RewriteGroup((tuple(SortedRun(files=[f]) for f in task.files),), drop_delete=True)
    plan = TaskPlan(
        partition=task.partition,
        bucket=task.bucket,
        total_buckets=task.num_buckets,
        output_level=task.output_level,
        drop_delete=True,
        files=task.files,
        rewrites=(group,),
        upgrades=(),
        rewriter=Rewriter(MERGE, max_level=task.output_level),
    )
    files = TaskRun(table, plan, MergeStats()).rewrite(group)  # removes its files on failure
    return (BucketWrite(task.partition, task.bucket, tuple(files), 0),)


TARGET_MERGE: Work[TargetMerge, tuple[BucketWrite, ...]] = Work(
    "new buckets", merge_target, discard_placed
)


def settle(
    table: FileStoreTable,
    ref: TableRef,
    executor: TaskExecutor,
    writes: Sequence[BucketWrite],
    num_buckets: int,
    output_level: int,
) -> list[BucketChange]:
    """Each new bucket's files as one run at the output level; the level-0 files merged away
    are deleted. On failure every file written, level-0 or merged, is deleted."""
    by_bucket: dict[tuple[Partition, int], list[DataFileMeta]] = {}
    for w in writes:
        by_bucket.setdefault((w.partition, w.bucket), []).extend(w.files)
    merges = tuple(
        TargetMerge(p, b, num_buckets, tuple(files), output_level)
        for (p, b), files in by_bucket.items()
        if len(files) > 1
    )
    try:
        merged = executor.run(table, ref, merges, TARGET_MERGE)
    finally:
        for m in merges:  # never committed, whatever happens next
            delete_data_files(table, m.partition, m.bucket, m.files)
    outputs = {(w.partition, w.bucket): w.files for ws in merged for w in ws}
    changes = []
    for (partition, bucket_id), files in by_bucket.items():
        out = outputs.get((partition, bucket_id))
        if out is None:  # one file: moved to the output level, as an upgrade would
            out = tuple(replace(f, level=output_level) for f in files)
        changes.append(BucketChange(partition, bucket_id, num_buckets, added=out, new_files=out))
    return changes


class RescaleProducer(OverwriteProducer):
    """The OVERWRITE of the rescaled partitions, in `commit.strict-mode.last-safe-snapshot` mode.

    Java's StrictModeChecker fails the commit when, after the snapshot the rescale read, another
    user's APPEND, COMPACT or OVERWRITE snapshot touched a rescaled partition. Every such change
    of the partitions' data adds or removes a file, so comparing the partitions' live files with
    those the rescale read finds the same conflicts (a compaction that only moved files between
    levels, leaving the rows as they were, is not one here).
    """

    operation = "rescale"

    def __init__(self, *args: Any, read_files: frozenset[str], **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.read_files = read_files

    def check(self, latest: Snapshot | None, entries: list[ManifestEntry]) -> None:
        """Fail if the partitions' live files are no longer those the rescale read."""
        super().check(latest, entries)
        now = {
            e.file.file_name
            for e in self.live(latest, with_stats=self.live_stats)
            if Partition(tuple(e.partition.values)) in self.partitions
        }
        if now != self.read_files:
            raise CommitConflictError(
                f"another writer changed partitions {sorted(p.label() for p in self.partitions)} "
                f"of {self.table_name} after the snapshot the rescale read "
                "(commit.strict-mode.last-safe-snapshot): nothing was committed, run the "
                "rescale again"
            )


@dataclass(frozen=True, kw_only=True)
class RescaleResult(Reported):
    """What a rescale did (or, in a dry run, would do)."""

    FIELDS: ClassVar[Mapping[str, Any]] = {
        "table": DETAIL,
        "snapshot_id": DETAIL,
        "base_snapshot_id": DETAIL,
        "dry_run": DETAIL,
        "bucket_num": METRIC,
        "partitions": DETAIL,
        "previous_buckets": DETAIL,
        "files_read": METRIC,
        "bytes_read": METRIC,
        "files_written": METRIC,
        "bytes_written": METRIC,
        "seconds": METRIC,
    }

    table: str
    snapshot_id: int | None
    base_snapshot_id: int | None
    dry_run: bool
    bucket_num: int
    partitions: tuple[dict[str, str], ...]
    previous_buckets: tuple[int, ...]
    files_read: int
    bytes_read: int
    files_written: int = 0
    bytes_written: int = 0
    seconds: float = 0.0

    def summary(self) -> str:
        """The CLI's line."""
        where = f"{len(self.partitions)} partitions" if self.partitions else "nothing"
        if self.dry_run:
            return (
                f"{self.table}: dry run, would rescale {where} from {list(self.previous_buckets)} "
                f"to {self.bucket_num} buckets ({self.files_read} files, {self.bytes_read} bytes)"
            )
        if self.snapshot_id is None:
            return f"{self.table}: nothing to rescale"
        return (
            f"{self.table}: rescaled {where} to {self.bucket_num} buckets in OVERWRITE snapshot "
            f"{self.snapshot_id}: {self.files_read} files read, {self.files_written} written "
            f"in {self.seconds:.2f} s"
        )


@dataclass(frozen=True, kw_only=True)
class RescalePlan:
    """Every source bucket's task against one base snapshot."""

    table: str
    base_snapshot_id: int | None
    bucket_num: int
    partitions: tuple[Partition, ...]
    tasks: tuple[RescaleTask, ...]
    previous_buckets: tuple[int, ...]
    num_levels: int

    @property
    def read_files(self) -> frozenset[str]:
        """Every live file of the rescaled partitions at the base snapshot."""
        return frozenset(f.file_name for t in self.tasks for f in t.plan.files)

    def preview(self) -> RescaleResult:
        """The rescale, not run."""
        return RescaleResult(
            table=self.table,
            snapshot_id=None,
            base_snapshot_id=self.base_snapshot_id,
            dry_run=True,
            bucket_num=self.bucket_num,
            partitions=tuple(p.spec for p in self.partitions),
            previous_buckets=self.previous_buckets,
            files_read=sum(len(t.plan.files) for t in self.tasks),
            bytes_read=sum(t.plan.input_bytes for t in self.tasks),
        )


def check_rescalable(table: FileStoreTable, bucket_num: int) -> None:
    """Refuse what Paimon's rescale (or we) cannot do; the table is unchanged."""
    if isinstance(bucket_num, bool) or not isinstance(bucket_num, int) or bucket_num < 1:
        raise InvalidArgumentError(f"bucket_num must be an integer >= 1, got {bucket_num!r}")
    schema = table.table_schema
    if not schema.primary_keys:
        raise UnsupportedLayoutError(
            f"{table.identifier.get_full_name()} is an append table: dagster-paimon rescales "
            "primary-key tables only"
        )
    count = bucket(schema.options)
    if count in (DYNAMIC_BUCKET, POSTPONE_BUCKET):
        mode = "dynamic" if count == DYNAMIC_BUCKET else "postpone"
        raise UnsupportedLayoutError(
            f"table option 'bucket' is {count} ({mode} bucket mode): only fixed-bucket tables "
            "are rescaled; nothing was changed"
        )
    check_supported_layout(schema, operation=COMPACTION)
    fixed_bucket_count(schema)


def _source_plan(bucket_levels: BucketLevels, rewriter: Rewriter) -> TaskPlan:
    """A full merge of every sorted run of one bucket, deletes dropped."""
    levels = bucket_levels.levels
    runs = tuple(r.run for r in levels.level_sorted_runs())
    files = tuple(levels.all_files())
    return TaskPlan(
        partition=bucket_levels.partition,
        bucket=bucket_levels.bucket,
        total_buckets=bucket_levels.total_buckets,
        output_level=levels.max_level(),
        drop_delete=True,
        files=files,
        rewrites=(RewriteGroup((runs,), drop_delete=True, changelog=False),) if runs else (),
        upgrades=(),
        rewriter=rewriter,
        dv_index=bucket_levels.dv_index,
    )


def plan_rescale(levels: TableLevels, bucket_num: int) -> RescalePlan:
    """One task per real bucket of the partitions in `levels` (already filtered)."""
    options = compaction_job_options(levels.options)
    check_supported(options)
    rewriter = Rewriter.for_options(options)
    real = [b for b in levels.buckets if b.bucket >= 0 and b.levels.all_files()]
    tasks = tuple(RescaleTask(_source_plan(b, rewriter), bucket_num) for b in real)
    partitions = tuple(sorted({b.partition for b in real}, key=lambda p: p.label()))
    previous = tuple(sorted({b.total_buckets for b in real}))
    log.info(
        "planned rescale of %d partitions (%d buckets, counts %s) of %s to %d buckets at "
        "snapshot %s",
        len(partitions),
        len(tasks),
        list(previous),
        levels.table,
        bucket_num,
        levels.snapshot_id,
    )
    return RescalePlan(
        table=levels.table,
        base_snapshot_id=levels.snapshot_id,
        bucket_num=bucket_num,
        partitions=partitions,
        tasks=tasks,
        previous_buckets=previous,
        num_levels=options.num_levels,
    )


def execute_rescale(
    table: FileStoreTable,
    ref: TableRef,
    plan: RescalePlan,
    executor: TaskExecutor | None = None,
) -> RescaleResult:
    """Run every task and commit one OVERWRITE snapshot; the table is unchanged on any failure.

    Raises CommitConflictError (another writer changed the partitions since the base snapshot),
    CorruptMetadataError, TransientStoreError; every file written is then removed.
    """
    start = time.perf_counter()
    if not plan.tasks:
        return replace(plan.preview(), dry_run=False)
    executor = executor or LocalExecutor()
    output_level = plan.num_levels - 1
    with transient_errors(table_unchanged=True):  # the tasks only write new files
        placed = executor.run(table, ref, plan.tasks, RESCALE)
        writes = [w for ws in placed for w in ws]
        try:
            changes = settle(table, ref, executor, writes, plan.bucket_num, output_level)
        except BaseException:
            discard_placed(table, placed)
            raise
    producer = RescaleProducer(
        table, changes, partitions=plan.partitions, read_files=plan.read_files
    )
    outcome = producer.commit()  # discards the new files on failure
    return replace(
        plan.preview(),
        dry_run=False,
        snapshot_id=outcome.snapshot.id,
        files_written=sum(len(c.added) for c in changes),
        bytes_written=sum(f.file_size for c in changes for f in c.added),
        seconds=time.perf_counter() - start,
    )


def partition_specs(
    table: FileStoreTable, partitions: Sequence[Mapping[str, str]] | None
) -> tuple[dict[str, str], ...] | None:
    """The specs as strings over the table's partition keys; None rescales every partition.

    Raises InvalidArgumentError (not a list of mappings, an empty list, an unknown key).
    """
    if partitions is None:
        return None
    if isinstance(partitions, (str, bytes, Mapping)) or not isinstance(partitions, Sequence):
        raise InvalidArgumentError(
            f"partitions must be a list of partition specs ({{column: value}}), got {partitions!r}"
        )
    if not partitions:
        raise InvalidArgumentError(
            "partitions is empty: give at least one partition spec, or None for every partition"
        )
    specs = []
    for spec in partitions:
        if not isinstance(spec, Mapping):
            raise InvalidArgumentError(
                f"each partition spec must be a mapping of column to value, got {spec!r}"
            )
        check_partition_keys(table, spec)
        specs.append({str(k): str(v) for k, v in spec.items()})
    return tuple(specs)


def select_partitions(levels: TableLevels, specs: tuple[dict[str, str], ...] | None) -> TableLevels:
    """The buckets of partitions matching any spec (OR of specs, AND within one, as Java's
    `partitions` argument); every spec must match a partition holding data.

    Raises PartitionNotFoundError, naming the specs that match nothing.
    """
    if specs is None:
        return levels
    held = [b for b in levels.buckets if b.bucket >= 0 and b.levels.all_files()]
    missing = [s for s in specs if not any(b.partition.matches(s) for b in held)]
    if missing:
        shown = "; ".join(",".join(f"{k}={v}" for k, v in s.items()) or "-" for s in missing)
        raise PartitionNotFoundError(
            f"{shown}: no partition of {levels.table} holding data matches "
            f"(snapshot {levels.snapshot_id}); nothing was changed"
        )
    return replace(
        levels, buckets=[b for b in levels.buckets if any(b.partition.matches(s) for s in specs)]
    )


def rescale_open_table(
    table: FileStoreTable,
    ref: TableRef,
    *,
    bucket_num: int,
    partitions: Sequence[Mapping[str, str]] | None = None,
    executor: TaskExecutor | None = None,
    dry_run: bool = False,
) -> RescaleResult:
    """Rescale the table (or the partitions matching any of `partitions`) to `bucket_num`
    buckets, all in one OVERWRITE snapshot; the engine under `PaimonTable.rescale`, `ref`
    reopening the same table in other processes (Spark executors).

    Raises InvalidArgumentError (bucket_num < 1, malformed specs, a partition key the table
    lacks), PartitionNotFoundError (a spec matching no partition holding data),
    UnsupportedLayoutError (append, dynamic- or postpone-bucket tables, layouts we do not
    compact), InvalidOptionError; not input: CommitConflictError, CorruptMetadataError,
    TransientStoreError. The table is unchanged on any error.
    """
    check_rescalable(table, bucket_num)
    specs = partition_specs(table, partitions)
    return run_planned(
        lambda: plan_rescale(
            select_partitions(read_levels(table, with_stats=not dry_run), specs), bucket_num
        ),
        lambda plan: execute_rescale(table, ref, plan, executor),
        dry_run=dry_run,
    )
