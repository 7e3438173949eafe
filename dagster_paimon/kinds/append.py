"""Append tables (no primary key): no LSM tree, files concatenated; judged and compacted by
what Paimon's append compaction (AppendCompactCoordinator, BucketedAppendCompactManager) would
rewrite: files below the small-file size, and rows deletion vectors mark."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from dagster_paimon.kinds.health import BucketHealth, HealthTotals, TableHealth, shared_totals
from dagster_paimon.kinds.kind import Assessment, PartitionKey
from dagster_paimon.lsm.compaction.append_plan import AppendTask, plan_append_tasks
from dagster_paimon.lsm.compaction.compact import CompactionPlan, plan_append_compaction
from dagster_paimon.lsm.model.append_options import AppendOptions
from dagster_paimon.lsm.model.compactors import ConflictingCompactors
from dagster_paimon.lsm.model.levels import BucketLevels, TableLevels
from dagster_paimon.table import APPEND


def _table_options(levels: TableLevels) -> Mapping[str, str]:
    """The table's options (an append table has a schema)."""
    assert levels.schema is not None, "an append table has a schema"
    return levels.schema.options


def files_health(bucket: BucketLevels, small_bytes: int) -> BucketHealth:
    """Measure one bucket's files: how many are below `small_bytes`, and the rows deletion
    vectors mark in them."""
    files = bucket.levels.all_files()
    names = {f.file_name for f in files}
    return BucketHealth(
        partition=bucket.partition.spec,
        bucket=bucket.bucket,
        files=len(files),
        total_bytes=sum(f.file_size for f in files),
        rows=sum(f.row_count for f in files),
        deleted_rows=sum(n for name, n in bucket.deleted_rows().items() if name in names),
        small_files=sum(1 for f in files if f.file_size < small_bytes),
    )


class AppendKind:
    """The kind of a table without a primary key."""

    name = APPEND
    check_name = "small_files"
    check_description = "Small files Paimon's append compaction would rewrite now."
    summary_title = "append table"
    summary_headers = ("partition", "bucket", "files", "small", "bytes", "rows", "deleted")

    def options(self, table_options: Mapping[str, str]) -> AppendOptions:
        """What append compaction and health read from the table's options."""
        return AppendOptions.from_table_options(table_options)

    def health(
        self, levels: TableLevels, compactors: ConflictingCompactors | None = None
    ) -> TableHealth:
        """Per-bucket file metrics and their totals, with the writers found compacting the
        table beside us.

        Raises InvalidOptionError (a malformed target-file-size or compaction.small-file-ratio).
        """
        table_options = levels.schema.options if levels.schema is not None else {}
        small = self.options(table_options).compaction_file_size
        return TableHealth(
            table=levels.table,
            snapshot_id=levels.snapshot_id,
            buckets=[files_health(b, small) for b in levels.buckets],
            conflicting_compactors=compactors,
            small_file_bytes=small,
            reporter=self,
        )

    def totals(self, buckets: Sequence[BucketHealth]) -> HealthTotals:
        """The buckets' figures summed, with the most small files of one bucket."""
        return HealthTotals(
            buckets=len(buckets),
            **shared_totals(buckets),
            small_files=sum(b.small_files or 0 for b in buckets),
            max_small_files=max((b.small_files or 0 for b in buckets), default=0),
        )

    def summary_row(self, bucket: BucketHealth) -> list[str]:
        """A bucket's files, small files, bytes, rows and deleted rows."""
        figures = (bucket.files, bucket.small_files, bucket.total_bytes, bucket.rows)
        return [bucket.label(), str(bucket.bucket), *map(str, figures), str(bucket.deleted_rows)]

    def summary_footer(self, health: TableHealth) -> list[str]:
        """The totals, small files against the small-file size."""
        s = health.aggregate()
        return [
            f"{s['buckets']} buckets, {s['files']} files ({s['small_files']} below "
            f"{health.small_file_bytes} bytes), {s['total_bytes']} bytes, "
            f"{s['deleted_rows']} of {s['rows']} rows deleted by deletion vectors"
        ]

    def _due(self, levels: TableLevels) -> tuple[AppendTask, ...]:
        """The tasks Paimon's append compaction would run now (its coordinator, or a bucket's
        compaction manager)."""
        return plan_append_tasks(levels, self.options(_table_options(levels)))

    def assess(
        self, levels: TableLevels, compactors: ConflictingCompactors | None = None
    ) -> Assessment:
        """A warning where Paimon's append compaction would rewrite files now (an append table
        has no write stall to fail on)."""
        tasks = self._due(levels)
        due = sorted({t.partition.label() for t in tasks})
        files = sum(len(t.files) for t in tasks)
        warnings = (
            (
                f"{files} small files in {len(due)} partitions are due for compaction: "
                + ", ".join(due[:10])
                + (f" and {len(due) - 10} more" if len(due) > 10 else ""),
            )
            if tasks
            else ()
        )
        return Assessment(
            self.health(levels, compactors), "no files due for compaction", (), warnings
        )

    def plan(self, levels: TableLevels, *, full: bool = False) -> CompactionPlan:
        """The files Paimon's append compaction would rewrite now, or all of them (full)."""
        return plan_append_compaction(levels, self.options(_table_options(levels)), full=full)

    def partitions_to_compact(
        self, levels: TableLevels, *, trigger: int | None = None, max_amp: int | None = None
    ) -> set[PartitionKey]:
        """The partitions Paimon's append compaction would rewrite files of now; an append
        table has no sorted runs nor amplification, so `trigger` and `max_amp` do not apply."""
        return {tuple(sorted(t.partition.spec.items())) for t in self._due(levels)}


APPEND_KIND = AppendKind()
