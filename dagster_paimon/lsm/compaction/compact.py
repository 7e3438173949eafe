"""Table-wide compaction planning: levels -> strategy -> unit -> task plan, for every bucket."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, replace

from pypaimon.table.file_store_table import FileStoreTable

from dagster_paimon.errors import InvalidOptionError
from dagster_paimon.commit.producer import commit_compaction
from dagster_paimon.lsm.compaction.executor import LocalExecutor, TaskExecutor
from dagster_paimon.lsm.model.levels import BucketLevels, TableLevels, read_levels
from dagster_paimon.lsm.model.options import (
    CHANGELOG_PRODUCER,
    DELETION_VECTORS,
    RECORD_LEVEL_EXPIRE_TIME,
    CompactionOptions,
)
from dagster_paimon.lsm.compaction.plan import TaskPlan, plan_compaction
from dagster_paimon.lsm.compaction.task import CompactResult, CompactTask, TableRef
from dagster_paimon.lsm.compaction.strategy import drop_delete, strategy_from_options, trigger_compaction

log = logging.getLogger(__name__)

COMPACTION_SNAPSHOT_ID = "paimon/compaction_snapshot_id"
COMPACTION_UNITS = "paimon/compaction_units"
COMPACTION_FILES_REWRITTEN = "paimon/files_rewritten"
COMPACTION_FILES_UPGRADED = "paimon/files_upgraded"
COMPACTION_FILES_WRITTEN = "paimon/files_written"
COMPACTION_BYTES_READ = "paimon/bytes_read"
COMPACTION_BYTES_WRITTEN = "paimon/bytes_written"
COMPACTION_SECONDS = "paimon/compaction_seconds"


def check_supported(options: CompactionOptions) -> None:
    """Refuse tables whose compaction must also write files we do not produce."""
    if options.deletion_vectors_enabled:
        raise InvalidOptionError(
            f"table option '{DELETION_VECTORS}' is true: compaction would have to maintain "
            "deletion-vector index files, which dagster-paimon does not write yet"
        )
    if options.changelog_producer in ("lookup", "full-compaction"):
        raise InvalidOptionError(
            f"table option '{CHANGELOG_PRODUCER}' is {options.changelog_producer!r}: compaction "
            "would have to produce changelog files, which dagster-paimon does not write yet"
        )
    if options.record_level_expire_time_ms is not None:
        raise InvalidOptionError(
            f"table option '{RECORD_LEVEL_EXPIRE_TIME}' is set: record-level expiry during "
            "compaction is not supported by dagster-paimon"
        )


def compaction_job_options(options: CompactionOptions) -> CompactionOptions:
    """We are a dedicated compaction job: like Paimon's, it ignores write-only."""
    return replace(options, write_only=False)


def plan_bucket(bucket: BucketLevels, options: CompactionOptions, *, full: bool) -> TaskPlan | None:
    """The task Paimon's compact manager would run for one bucket now, or None."""
    levels = bucket.levels
    strategy = strategy_from_options(options, restore_files=levels.all_files())
    unit = trigger_compaction(
        levels.level_sorted_runs(), levels.number_of_levels(), strategy, full, options
    )
    if unit is None:
        return None
    plan = plan_compaction(
        unit,
        max_level=levels.max_level(),
        drop_delete=drop_delete(
            unit.output_level, levels.non_empty_highest_level(), options.deletion_vectors_enabled
        ),
        options=options,
        partition=bucket.partition,
        bucket=bucket.bucket,
    )
    return None if plan.is_empty else plan


@dataclass(frozen=True)
class CompactionPlan:
    """Every bucket's task against one base snapshot; the commit checks it is still valid."""

    table: str
    base_snapshot_id: int | None
    tasks: list[TaskPlan]
    levels: TableLevels

    @property
    def bytes_to_read(self) -> int:
        """Bytes the rewrites will read; upgrades read nothing."""
        return sum(t.rewritten_bytes for t in self.tasks)


def plan_table_compaction(levels: TableLevels, *, full: bool = False) -> CompactionPlan:
    """Plan a compaction of every bucket in `levels` (already filtered to a partition if wanted)."""
    options = compaction_job_options(levels.options)
    check_supported(options)
    tasks = [t for b in levels.buckets if (t := plan_bucket(b, options, full=full)) is not None]
    log.info(
        "planned %d compaction tasks over %d buckets of %s at snapshot %s",
        len(tasks),
        len(levels.buckets),
        levels.table,
        levels.snapshot_id,
    )
    return CompactionPlan(levels.table, levels.snapshot_id, tasks, levels)


@dataclass(frozen=True)
class CompactionReport:
    """What a compaction run did: the snapshot it committed (None if nothing to do) and metrics."""

    table: str
    snapshot_id: int | None
    base_snapshot_id: int | None
    plans: list[TaskPlan]
    results: list[CompactResult]
    seconds: float

    @property
    def bytes_read(self) -> int:
        """Bytes of the files rewritten."""
        return sum(r.bytes_read for r in self.results)

    @property
    def bytes_written(self) -> int:
        """Bytes of the files written."""
        return sum(r.bytes_written for r in self.results)

    def to_metadata(self) -> dict[str, int | float | None]:
        """Flat metrics for orchestration UIs to show and plot."""
        return {
            COMPACTION_SNAPSHOT_ID: self.snapshot_id,
            COMPACTION_UNITS: len(self.plans),
            COMPACTION_FILES_REWRITTEN: sum(r.rewritten_files for r in self.results),
            COMPACTION_FILES_UPGRADED: sum(r.upgraded_files for r in self.results),
            COMPACTION_FILES_WRITTEN: sum(len(r.new_files) for r in self.results),
            COMPACTION_BYTES_READ: self.bytes_read,
            COMPACTION_BYTES_WRITTEN: self.bytes_written,
            COMPACTION_SECONDS: round(self.seconds, 3),
        }

    def to_dict(self) -> dict:
        """The compact JSON of DESIGN.md section 6."""
        units = []
        for plan, result in zip(self.plans, self.results, strict=True):
            unit = plan.to_dict()
            unit["output_files"] = len(result.new_files)
            unit["output_file_names"] = [f.file_name for f in result.new_files]
            units.append(unit)
        return {
            "table": self.table,
            "snapshot_id": self.snapshot_id,
            "base_snapshot_id": self.base_snapshot_id,
            "dry_run": False,
            "units": units,
            "bytes_read": self.bytes_read,
            "bytes_written": self.bytes_written,
            "seconds": round(self.seconds, 3),
        }


def tasks_of(plan: CompactionPlan) -> list[CompactTask]:
    """Attach to each plan the typed partition and bucket count its executor needs."""
    index = {(tuple(b.partition.items()), b.bucket): b for b in plan.levels.buckets}
    tasks = []
    for t in plan.tasks:
        bucket = index[(tuple(t.partition.items()), t.bucket)]
        tasks.append(CompactTask(t, bucket.partition_values, bucket.total_buckets))
    return tasks


def compact_table(
    table: FileStoreTable,
    ref: TableRef,
    *,
    full: bool = False,
    partition: dict[str, str] | None = None,
    executor: TaskExecutor | None = None,
) -> CompactionReport:
    """Plan, execute and commit one COMPACT snapshot; the table is unchanged on any failure."""
    start = time.perf_counter()
    levels = read_levels(table, partition=partition, with_stats=True)
    plan = plan_table_compaction(levels, full=full)
    if not plan.tasks:
        return CompactionReport(levels.table, None, levels.snapshot_id, [], [], 0.0)
    results = (executor or LocalExecutor()).run(table, ref, tasks_of(plan))
    outcome = commit_compaction(table, results, num_levels=levels.options.num_levels)
    return CompactionReport(
        levels.table,
        outcome.snapshot.id,
        levels.snapshot_id,
        plan.tasks,
        results,
        time.perf_counter() - start,
    )
