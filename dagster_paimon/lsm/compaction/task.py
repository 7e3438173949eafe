"""Execute one bucket's task plan: merge rewrite groups into rolling files, upgrade the rest."""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TypeVar

import numpy as np
import pyarrow as pa

from dagster_paimon.commit.changes import BucketChange
from dagster_paimon.format.manifest import DataFileMeta, IndexFileMeta
from dagster_paimon.format.table import FileStoreTable
from dagster_paimon.io.index import BucketVectors
from dagster_paimon.io.kv import key_columns
from dagster_paimon.io.paths import delete_data_files
from dagster_paimon.io.read import (
    FileRows,
    RowFilter,
    count_retracts,
    read_run,
    run_batch_rows,
)
from dagster_paimon.io.vectors import positions_of
from dagster_paimon.io.write import (
    APPEND_FILE_SOURCE,
    COMPACT_FILE_SOURCE,
    RollingWriter,
    write_all,
)
from dagster_paimon.lsm.compaction.plan import RewriteGroup, TaskPlan, Upgrade
from dagster_paimon.lsm.compaction.rewriter import FULL_CHANGELOG, LOOKUP
from dagster_paimon.lsm.merge.kway import MergeEngine, MergeStats, SliceMerge, merge_sorted_runs
from dagster_paimon.lsm.merge.lookup import LevelLookup
from dagster_paimon.lsm.merge.wrappers import (
    ChangelogRule,
    ChangelogSink,
    FirstRowMerge,
    FullChangelogMerge,
    LookupMerge,
)
from dagster_paimon.lsm.model.record_expiry import RecordLevelExpire

log = logging.getLogger(__name__)

T = TypeVar("T")


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


class TaskRun:
    """What one task's rewrites and scans share: merge engine, vectors, lookups, changelog."""

    def __init__(self, table: FileStoreTable, plan: TaskPlan, stats: MergeStats):
        schema = table.table_schema
        self.table, self.plan, self.stats = table, plan, stats
        self.engine = MergeEngine.for_table(schema)
        self.keys = key_columns(schema)
        self.rule = ChangelogRule.for_table(schema)
        expire = RecordLevelExpire.for_table(schema)
        self.row_filter = (
            RowFilter((expire.field_name,), expire.keep) if expire is not None else None
        )
        rewriter = plan.rewriter
        self.vectors = (
            BucketVectors.restore(table, plan.partition, plan.bucket, plan.dv_index)
            if rewriter.deletion_vectors
            else None
        )
        self.lookup = None
        if plan.uses_lookup:
            self.lookup = LevelLookup(
                plan.lookup_levels, self.keys, self._open, with_values=rewriter.looks_up_values
            )
        self.changelog: list[DataFileMeta] = []

    def _deleted(self, file_name: str) -> np.ndarray | None:
        """The positions a file's deletion vector marks, if it has one."""
        vector = self.vectors.of(file_name) if self.vectors is not None else None
        return positions_of(vector) if vector is not None else None

    def _open(self, meta: DataFileMeta) -> FileRows:
        """A file above the output, opened for lookups with its deletion vector applied."""
        plan = self.plan
        # first-row lookups read keys without expiry, as Java's separate reader does
        row_filter = None if plan.rewriter.first_row else self.row_filter
        return FileRows(
            self.table,
            plan.partition,
            plan.bucket,
            meta,
            self.keys,
            self._deleted(meta.file_name),
            row_filter,
        )

    def _slice_merge(
        self, changelog: bool, drop_delete: bool, sink: ChangelogSink | None
    ) -> SliceMerge | None:
        """The merge of each slice for this rewriter (None: the plain merge function)."""
        rewriter = self.plan.rewriter
        if rewriter.kind == FULL_CHANGELOG and changelog:
            assert sink is not None, "a full-compaction changelog rewriter always has a sink"
            return FullChangelogMerge(
                self.engine,
                self.keys,
                self.rule,
                max_level=rewriter.max_level,
                lookup_merge=rewriter.lookup_merge,
                changelog=sink,
            )
        if rewriter.kind == LOOKUP and changelog:
            assert self.lookup is not None
            if rewriter.first_row:
                return FirstRowMerge(
                    self.engine,
                    self.keys,
                    self.rule.kv_names,
                    drop_delete=drop_delete,
                    lookup=self.lookup,
                    changelog=sink,
                )
            return LookupMerge(
                self.engine,
                self.keys,
                self.rule,
                drop_delete=drop_delete,
                lookup=self.lookup,
                vectors=self.vectors,
                changelog=sink,
            )
        if rewriter.lookup_merge:
            return LookupMerge(self.engine, self.keys, self.rule, drop_delete=drop_delete)
        return None

    def merged(self, group: RewriteGroup, sink: ChangelogSink | None) -> Iterable[pa.RecordBatch]:
        """A group's sections merged in key order, each section's runs k-way merged."""
        slice_merge = self._slice_merge(group.changelog, group.drop_delete, sink)
        batch_rows = run_batch_rows(max(len(section) for section in group.sections))
        plan = self.plan
        for section in group.sections:
            runs = [
                read_run(
                    self.table,
                    plan.partition,
                    plan.bucket,
                    r.files,
                    batch_rows,
                    deleted={
                        f.file_name: d
                        for f in r.files
                        if (d := self._deleted(f.file_name)) is not None
                    },
                    with_level=slice_merge is not None,
                    row_filter=self.row_filter,
                )
                for r in section
            ]
            yield from merge_sorted_runs(
                runs,
                self.engine,
                drop_delete=group.drop_delete,
                key_columns=self.keys,
                stats=self.stats,
                slice_merge=slice_merge,
            )

    def _changelog_writer(self) -> RollingWriter:
        """A rolling writer of changelog files at the output level."""
        plan = self.plan
        return RollingWriter(
            self.table,
            plan.partition,
            plan.bucket,
            plan.output_level,
            APPEND_FILE_SOURCE,
            changelog=True,
        )

    def _with_changelog(self, consume: Callable[[ChangelogSink | None], T]) -> T:
        """Run `consume` with a changelog sink if this rewriter produces one; keep its files."""
        if not self.plan.rewriter.produces_changelog:
            return consume(None)
        writer = self._changelog_writer()
        try:
            out = consume(_sink(writer))
            self.changelog += writer.finish()
        except BaseException:
            writer.abort()
            raise
        return out

    def rewrite(self, group: RewriteGroup) -> list[DataFileMeta]:
        """Merge a group into new files at the output level (and its changelog)."""
        plan = self.plan
        writer = RollingWriter(
            self.table, plan.partition, plan.bucket, plan.output_level, COMPACT_FILE_SOURCE
        )
        return self._with_changelog(lambda sink: write_all(writer, self.merged(group, sink)))

    def rewrite_instead(self, upgrade: Upgrade) -> RewriteGroup | None:
        """The rewrite replacing an upgrade whose file holds retractions it does not declare.

        Java trusts deleteRowCount when it upgrades a file to the top level (drop-delete) or,
        in a deletion-vector table, out of level 0; pypaimon writes 0 even for files with -D
        rows, and upgrading those would leave deletes where readers read files raw.
        """
        plan = self.plan
        file = upgrade.file
        out_of_level0 = plan.rewriter.deletion_vectors and upgrade.scan and file.level == 0
        to_top = plan.drop_delete and upgrade.output_level == plan.rewriter.max_level
        if not (out_of_level0 or to_top):
            return None
        retracts = count_retracts(self.table, plan.partition, plan.bucket, file)
        if not retracts:
            return None
        log.warning(
            "%s declares %s delete rows but holds %d; rewriting it instead of upgrading",
            file.file_name,
            file.delete_row_count,
            retracts,
        )
        if out_of_level0:
            return RewriteGroup.alone(file, drop_delete=True, changelog=True)
        changelog = plan.rewriter.changelog_rewrite(upgrade.output_level, [file])
        return RewriteGroup.alone(file, drop_delete=True, changelog=changelog)

    def scan(self, upgrade: Upgrade) -> None:
        """Run an upgraded file through the wrapper: lookups, vectors, changelog; no output."""
        group = RewriteGroup.alone(
            upgrade.file, drop_delete=self.plan.rewriter.force_drop_delete, changelog=True
        )
        self._with_changelog(lambda sink: deque(self.merged(group, sink), maxlen=0))

    def index(self, rewritten: Iterable[DataFileMeta]) -> IndexFileMeta | None:
        """The bucket's new deletion-vector index, if its vectors changed."""
        if self.vectors is None:
            return None
        self.vectors.remove(f.file_name for f in rewritten)
        if not self.vectors.modified:
            return None
        return self.vectors.write(self.table, self.plan.partition, self.plan.bucket)


def _sink(writer: RollingWriter) -> ChangelogSink:
    """A changelog sink writing into a rolling writer."""

    def sink(table: pa.Table) -> None:
        for batch in table.to_batches():
            if batch.num_rows:
                writer.write(batch)

    return sink


def run_task(table: FileStoreTable, plan: TaskPlan) -> CompactResult:
    """Execute one task; on any failure the files it wrote are deleted and the error re-raised."""
    start = time.perf_counter()
    stats = MergeStats()
    run = TaskRun(table, plan, stats)
    new_files: list[DataFileMeta] = []
    rewritten = list(plan.rewritten_files)
    upgrades: list[Upgrade] = []
    index: IndexFileMeta | None = None
    try:
        for group in plan.rewrites:
            new_files.extend(run.rewrite(group))
        for upgrade in plan.upgrades:
            instead = run.rewrite_instead(upgrade)
            if instead is not None:
                new_files.extend(run.rewrite(instead))
                rewritten.append(upgrade.file)
                continue
            if upgrade.scan:
                run.scan(upgrade)
            upgrades.append(upgrade)
        index = run.index(rewritten)
    except BaseException:
        delete_data_files(table, plan.partition, plan.bucket, [*new_files, *run.changelog])
        raise
    upgraded = [u.upgraded_file() for u in upgrades]
    result = CompactResult(
        change=BucketChange(
            plan.partition,
            plan.bucket,
            plan.total_buckets,
            deleted=(*rewritten, *(u.file for u in upgrades)),
            added=(*new_files, *upgraded),
            new_files=tuple(new_files),
            changelog=tuple(run.changelog),
            index=index,
            base_index=plan.dv_index.names if plan.dv_index is not None else (),
        ),
        bytes_read=sum(f.file_size for f in rewritten),
        bytes_written=sum(f.file_size for f in new_files),
        rewritten_files=len(rewritten),
        upgraded_files=len(upgraded),
        seconds=time.perf_counter() - start,
    )
    log.info(
        "compacted %s bucket %d: %d files rewritten into %d at level %d, %d upgraded, "
        "%d changelog files%s, %d files opened for lookups, %.1f MB read in %.2f s; "
        "%d rows merged into %d, at most %d rows buffered",
        plan.partition.label(),
        plan.bucket,
        result.rewritten_files,
        len(new_files),
        plan.output_level,
        result.upgraded_files,
        len(run.changelog),
        ", new deletion-vector index" if index is not None else "",
        run.lookup.files_opened if run.lookup is not None else 0,
        result.bytes_read / 1e6,
        result.seconds,
        stats.rows_read,
        stats.rows_written,
        stats.peak_buffered_rows,
    )
    return result
