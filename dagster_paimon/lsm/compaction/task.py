"""Execute one bucket's task plan: merge rewrite groups into rolling files, upgrade the rest."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass

import pyarrow as pa
from pypaimon.manifest.schema.data_file_meta import DataFileMeta
from pypaimon.table.file_store_table import FileStoreTable

from dagster_paimon.commit.changes import BucketChange
from dagster_paimon.io.kv import key_columns
from dagster_paimon.io.paths import delete_data_files
from dagster_paimon.io.read import read_run, run_batch_rows
from dagster_paimon.io.write import COMPACT_FILE_SOURCE, RollingWriter, write_all
from dagster_paimon.lsm.compaction.plan import RewriteGroup, Section, TaskPlan
from dagster_paimon.lsm.merge.kway import MergeEngine, MergeStats, merge_sorted_runs

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CompactResult:
    """What one task changed (Java's CompactResult, as a commit's BucketChange) and its cost."""

    change: BucketChange
    bytes_read: int
    bytes_written: int
    rewritten_files: int
    upgraded_files: int
    seconds: float = 0.0

    @property
    def new_files(self) -> tuple[DataFileMeta, ...]:
        """The files the task wrote."""
        return self.change.new_files


def _section_stream(
    table: FileStoreTable,
    plan: TaskPlan,
    section: Section,
    engine: MergeEngine,
    batch_rows: int,
    stats: MergeStats,
) -> Iterable[pa.RecordBatch]:
    """One key-disjoint section merged: its runs k-way merged into one sorted stream."""
    runs = [read_run(table, plan.partition, plan.bucket, r.files, batch_rows) for r in section]
    return merge_sorted_runs(
        runs,
        engine,
        drop_delete=plan.drop_delete,
        key_columns=key_columns(table.table_schema),
        stats=stats,
    )


def rewrite_group(
    table: FileStoreTable,
    plan: TaskPlan,
    group: RewriteGroup,
    engine: MergeEngine,
    stats: MergeStats,
) -> list[DataFileMeta]:
    """Merge every section of a group into one rolling output at the task's output level."""
    batch_rows = run_batch_rows(max(len(section) for section in group.sections))
    writer = RollingWriter(
        table, plan.partition, plan.bucket, plan.output_level, COMPACT_FILE_SOURCE
    )
    return write_all(
        writer,
        (
            batch
            for section in group.sections
            for batch in _section_stream(table, plan, section, engine, batch_rows, stats)
        ),
    )


def run_task(table: FileStoreTable, plan: TaskPlan) -> CompactResult:
    """Execute one task; on any failure the files it wrote are deleted and the error re-raised."""
    start = time.perf_counter()
    engine = MergeEngine.for_table(table.table_schema)
    stats = MergeStats()
    new_files: list[DataFileMeta] = []
    try:
        for group in plan.rewrites:
            new_files.extend(rewrite_group(table, plan, group, engine, stats))
    except BaseException:
        delete_data_files(table, plan.partition, plan.bucket, new_files)
        raise
    upgraded = [u.upgraded_file() for u in plan.upgrades]
    result = CompactResult(
        change=BucketChange(
            plan.partition,
            plan.bucket,
            plan.total_buckets,
            deleted=(*plan.rewritten_files, *plan.upgraded_files),
            added=(*new_files, *upgraded),
            new_files=tuple(new_files),
        ),
        bytes_read=plan.rewritten_bytes,
        bytes_written=sum(f.file_size for f in new_files),
        rewritten_files=len(plan.rewritten_files),
        upgraded_files=len(upgraded),
        seconds=time.perf_counter() - start,
    )
    log.info(
        "compacted %s bucket %d: %d files rewritten into %d at level %d, %d upgraded, "
        "%.1f MB read in %.2f s; %d rows merged into %d, at most %d rows buffered",
        plan.partition.label(),
        plan.bucket,
        result.rewritten_files,
        len(new_files),
        plan.output_level,
        result.upgraded_files,
        result.bytes_read / 1e6,
        result.seconds,
        stats.rows_read,
        stats.rows_written,
        stats.peak_buffered_rows,
    )
    return result
