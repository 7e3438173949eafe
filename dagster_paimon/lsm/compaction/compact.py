"""Table-wide compaction: levels -> strategy -> unit -> task plan per bucket, run, one commit."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from pypaimon.manifest.schema.data_file_meta import DataFileMeta
from pypaimon.table.file_store_table import FileStoreTable

from dagster_paimon.commit.producers import CompactProducer
from dagster_paimon.errors import InvalidOptionError
from dagster_paimon.lsm.compaction.executor import LocalExecutor, TaskExecutor
from dagster_paimon.lsm.compaction.plan import TaskPlan, plan_task
from dagster_paimon.lsm.compaction.strategy import (
    drop_delete,
    strategy_from_options,
    trigger_compaction,
)
from dagster_paimon.lsm.compaction.task import CompactResult
from dagster_paimon.lsm.model.levels import BucketLevels, TableLevels, read_levels
from dagster_paimon.lsm.model.options import CompactionOptions
from dagster_paimon.lsm.model.record_expiry import RecordLevelExpire
from dagster_paimon.options import (
    BUCKET,
    CHANGELOG_PRODUCER,
    DELETION_VECTORS,
    FIRST_ROW,
    POSTPONE_BUCKET,
    RECORD_LEVEL_EXPIRE_TIME,
)
from dagster_paimon.results import Metrics, run_planned
from dagster_paimon.table import TableRef

log = logging.getLogger(__name__)

SNAPSHOT_ID = "compaction_snapshot_id"
UNITS = "compaction_units"
FILES_REWRITTEN = "files_rewritten"
FILES_UPGRADED = "files_upgraded"
FILES_WRITTEN = "files_written"
BYTES_READ = "bytes_read"
BYTES_WRITTEN = "bytes_written"
CHANGELOG_FILES = "changelog_files_written"
VECTOR_INDEXES = "deletion_vector_indexes_written"
SECONDS = "compaction_seconds"


def check_supported(options: CompactionOptions) -> None:
    """Refuse option combinations Paimon itself rejects, and those we do not compact yet."""
    if options.deletion_vectors_enabled and options.changelog_producer == "full-compaction":
        raise InvalidOptionError(
            f"table options '{DELETION_VECTORS}' and '{CHANGELOG_PRODUCER}'='full-compaction' "
            "cannot be combined: Paimon supports deletion vectors only with the none, input "
            "or lookup changelog producer"
        )
    if options.merge_engine == FIRST_ROW and options.deletion_vectors_enabled:
        raise InvalidOptionError(
            f"table option '{DELETION_VECTORS}' is true on a first-row table: Paimon refuses "
            "it, the first-row merge engine never deletes old data"
        )
    if options.merge_engine == FIRST_ROW and options.changelog_producer == "full-compaction":
        raise InvalidOptionError(
            f"table option '{CHANGELOG_PRODUCER}' is 'full-compaction' on a first-row table: "
            "Paimon supports only 'none' and 'lookup' with the first-row merge engine"
        )


def compaction_job_options(options: CompactionOptions) -> CompactionOptions:
    """We are a dedicated compaction job: like Paimon's, it ignores write-only."""
    return replace(options, write_only=False)


def plan_bucket(
    bucket: BucketLevels,
    options: CompactionOptions,
    *,
    full: bool,
    expired: Callable[[DataFileMeta], bool] | None = None,
) -> TaskPlan | None:
    """The task Paimon's compact manager would run for one bucket now, or None.

    `expired` tells files record-level expiry must rewrite (RecordLevelExpire.isExpireFile).
    """
    levels = bucket.levels
    strategy = strategy_from_options(options, restore_files=levels.all_files())
    unit = trigger_compaction(
        levels.level_sorted_runs(),
        levels.number_of_levels(),
        strategy,
        full,
        options,
        record_level_expire=expired or False,
        dv_files=set(bucket.deleted_rows()) if options.deletion_vectors_enabled else None,
    )
    if unit is None:
        return None
    plan = plan_task(
        unit,
        max_level=levels.max_level(),
        drop_delete=drop_delete(
            unit.output_level, levels.non_empty_highest_level(), options.deletion_vectors_enabled
        ),
        options=options,
        partition=bucket.partition,
        bucket=bucket.bucket,
        total_buckets=bucket.total_buckets,
        levels=levels,
        dv_index=bucket.dv_index,
        record_level_expire=expired,
    )
    return None if plan.is_empty else plan


def _unit_line(unit: Mapping[str, Any], executed: bool) -> str:
    """One bucket's task as the CLI prints it."""
    where = f"  {unit['partition_label']} bucket {unit['bucket']}: {unit['input_files']} files"
    if executed:
        extras = ""
        if unit["changelog_file_names"]:
            extras += f", {len(unit['changelog_file_names'])} changelog files"
        if unit["deletion_vector_index"]:
            extras += ", new deletion vectors"
        return (
            f"{where} -> {unit['output_files']} new at level {unit['output_level']}, "
            f"{unit['upgraded_files']} upgraded{extras}"
        )
    return (
        f"{where} -> level {unit['output_level']}, rewrite {unit['rewritten_files']} "
        f"({unit['rewritten_bytes']} bytes), upgrade {unit['upgraded_files']}, "
        f"drop deletes {'yes' if unit['drop_delete'] else 'no'}"
    )


@dataclass(frozen=True, kw_only=True)
class CompactionResult:
    """What a compaction committed (None if nothing to do), or with dry_run what it would do."""

    table: str
    snapshot_id: int | None
    base_snapshot_id: int | None
    dry_run: bool
    tasks: tuple[TaskPlan, ...] = ()
    results: tuple[CompactResult, ...] = ()
    seconds: float = 0.0

    @property
    def bytes_read(self) -> int:
        """Bytes of the files rewritten."""
        return sum(r.bytes_read for r in self.results)

    @property
    def bytes_written(self) -> int:
        """Bytes of the files written."""
        return sum(r.bytes_written for r in self.results)

    def metrics(self) -> Metrics:
        """Counts and bytes of the run."""
        return {
            SNAPSHOT_ID: self.snapshot_id,
            UNITS: len(self.tasks),
            FILES_REWRITTEN: sum(r.rewritten_files for r in self.results),
            FILES_UPGRADED: sum(r.upgraded_files for r in self.results),
            FILES_WRITTEN: sum(len(r.new_files) for r in self.results),
            BYTES_READ: self.bytes_read,
            BYTES_WRITTEN: self.bytes_written,
            CHANGELOG_FILES: sum(len(r.change.changelog) for r in self.results),
            VECTOR_INDEXES: sum(1 for r in self.results if r.change.index is not None),
            SECONDS: round(self.seconds, 3),
        }

    def _units(self) -> list[dict[str, Any]]:
        """Each task's plan, with what it wrote once executed."""
        units = []
        for i, task in enumerate(self.tasks):
            unit = task.to_dict()
            change = self.results[i].change if self.results else None
            written = change.new_files if change else None
            unit["output_files"] = None if written is None else len(written)
            unit["output_file_names"] = [f.file_name for f in written or ()]
            unit["changelog_file_names"] = [f.file_name for f in change.changelog] if change else []
            index = change.index if change else None
            unit["deletion_vector_index"] = index.file_name if index else None
            units.append(unit)
        return units

    def to_dict(self) -> dict[str, Any]:
        """The compact JSON of the CLI contract."""
        return {
            "table": self.table,
            "snapshot_id": self.snapshot_id,
            "base_snapshot_id": self.base_snapshot_id,
            "dry_run": self.dry_run,
            "units": self._units(),
            "bytes_read": self.bytes_read,
            "bytes_written": self.bytes_written,
            "bytes_to_read": sum(t.rewritten_bytes for t in self.tasks),
            "seconds": round(self.seconds, 3),
        }

    def summary(self) -> str:
        """One line for the run, then one per bucket task."""
        if not self.tasks:
            return f"{self.table}: nothing to compact at snapshot {self.base_snapshot_id}"
        if self.dry_run:
            head = (
                f"{self.table}: {len(self.tasks)} tasks at snapshot {self.base_snapshot_id} "
                "(dry run)"
            )
        else:
            head = (
                f"{self.table}: committed COMPACT snapshot {self.snapshot_id} "
                f"(base {self.base_snapshot_id}) in {self.seconds:.2f} s, "
                f"{self.bytes_read} bytes read, {self.bytes_written} bytes written"
            )
        units = self._units()
        for unit, task in zip(units, self.tasks, strict=True):
            unit["partition_label"] = task.partition.label()
        return "\n".join([head, *(_unit_line(u, not self.dry_run) for u in units)])


@dataclass(frozen=True)
class CompactionPlan:
    """Every bucket's task against one base snapshot; the commit checks it is still valid."""

    table: str
    base_snapshot_id: int | None
    tasks: tuple[TaskPlan, ...]

    def preview(self) -> CompactionResult:
        """The tasks, not run."""
        return CompactionResult(
            table=self.table,
            snapshot_id=None,
            base_snapshot_id=self.base_snapshot_id,
            dry_run=True,
            tasks=self.tasks,
        )


def plan_compaction(levels: TableLevels, *, full: bool = False) -> CompactionPlan:
    """Plan a compaction of every bucket in `levels` (already filtered to a partition if wanted)."""
    options = compaction_job_options(levels.options)
    check_supported(options)
    postponed = [b for b in levels.buckets if b.bucket == POSTPONE_BUCKET]
    if postponed:
        raise InvalidOptionError(
            f"{levels.table} has postpone-bucket files (table option '{BUCKET}' = "
            f"{POSTPONE_BUCKET}) in {len(postponed)} partitions: moving them into real buckets "
            "is not supported by dagster-paimon yet, and compacting them in place would leave "
            "their rows invisible; nothing was changed"
        )
    expire = RecordLevelExpire.for_table(levels.schema) if levels.schema else None
    expired = (
        (lambda f: expire.is_expired_file(f, levels.schemas.get)) if expire is not None else None
    )
    tasks = tuple(
        t for b in levels.buckets if (t := plan_bucket(b, options, full=full, expired=expired))
    )
    log.info(
        "planned %d compaction tasks over %d buckets of %s at snapshot %s",
        len(tasks),
        len(levels.buckets),
        levels.table,
        levels.snapshot_id,
    )
    return CompactionPlan(levels.table, levels.snapshot_id, tasks)


def execute_compaction(
    table: FileStoreTable,
    ref: TableRef,
    plan: CompactionPlan,
    executor: TaskExecutor | None = None,
) -> CompactionResult:
    """Run every task and commit one COMPACT snapshot; the table is unchanged on any failure."""
    start = time.perf_counter()
    if not plan.tasks:
        return replace(plan.preview(), dry_run=False)
    results = (executor or LocalExecutor()).run(table, ref, plan.tasks)
    outcome = CompactProducer(table, [r.change for r in results]).commit()
    return CompactionResult(
        table=plan.table,
        snapshot_id=outcome.snapshot.id,
        base_snapshot_id=plan.base_snapshot_id,
        dry_run=False,
        tasks=plan.tasks,
        results=tuple(results),
        seconds=time.perf_counter() - start,
    )


def compact_table(
    table: FileStoreTable,
    ref: TableRef,
    *,
    full: bool = False,
    partition: Mapping[str, str] | None = None,
    executor: TaskExecutor | None = None,
    dry_run: bool = False,
) -> CompactionResult:
    """Plan (Paimon's pick per bucket, or full) and, unless dry_run, run and commit it."""
    return run_planned(
        lambda: plan_compaction(
            read_levels(
                table,
                partition=partition,
                # record-level expiry judges files by their statistics, even in a dry run
                with_stats=not dry_run or RECORD_LEVEL_EXPIRE_TIME in table.table_schema.options,
            ),
            full=full,
        ),
        lambda plan: execute_compaction(table, ref, plan, executor),
        dry_run=dry_run,
    )
