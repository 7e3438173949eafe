"""Health of append tables (no primary key): files, small files, bytes and deleted rows per
bucket. An append table has no LSM tree (every file stays at level 0 and readers concatenate
files), so sorted runs and size amplification mean nothing there; what slows its readers and
what Paimon's append compaction (AppendCompactCoordinator, BucketedAppendCompactManager)
rewrites are files below the small-file size, and rows deletion vectors mark.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import ClassVar

from dagster_paimon.format.manifest import DataFileMeta
from dagster_paimon.lsm.model.append_options import AppendOptions
from dagster_paimon.lsm.model.compactors import ConflictingCompactors
from dagster_paimon.lsm.model.levels import TableLevels
from dagster_paimon.results import DETAIL, METRIC, Reported, aligned
from dagster_paimon.table import APPEND


@dataclass(frozen=True)
class AppendBucketHealth(Reported):
    """Metrics of one bucket of an append table (bucket 0 of an unaware-bucket table)."""

    partition: dict[str, str]
    bucket: int
    files: int
    small_files: int
    total_bytes: int
    rows: int
    deleted_rows: int

    FIELDS = {
        "partition": DETAIL,
        "bucket": DETAIL,
        "files": METRIC,
        "small_files": METRIC,
        "total_bytes": METRIC,
        "rows": METRIC,
        "deleted_rows": METRIC,
    }

    @classmethod
    def of(
        cls,
        partition: dict[str, str],
        bucket: int,
        files: Iterable[DataFileMeta],
        small_bytes: int,
        deleted: Mapping[str, int] | None = None,
    ) -> AppendBucketHealth:
        """Measure one bucket; `deleted` counts the rows deletion vectors mark, per file."""
        files = list(files)
        names = {f.file_name for f in files}
        return cls(
            partition=partition,
            bucket=bucket,
            files=len(files),
            small_files=sum(1 for f in files if f.file_size < small_bytes),
            total_bytes=sum(f.file_size for f in files),
            rows=sum(f.row_count for f in files),
            deleted_rows=sum(n for name, n in (deleted or {}).items() if name in names),
        )

    def label(self) -> str:
        """K=V[,K=V] of the bucket's partition, '-' for an unpartitioned table."""
        return ",".join(f"{k}={v}" for k, v in self.partition.items()) or "-"


@dataclass(frozen=True, kw_only=True)
class AppendHealthTotals(Reported):
    """An append table's health summed over its buckets (maxima are 0 for an empty table)."""

    buckets: int
    files: int
    small_files: int
    max_small_files: int
    total_bytes: int
    rows: int
    deleted_rows: int

    FIELDS = {
        "buckets": DETAIL,
        "files": METRIC,
        "small_files": METRIC,
        "max_small_files": METRIC,
        "total_bytes": METRIC,
        "rows": DETAIL,
        "deleted_rows": METRIC,
    }

    @classmethod
    def of(cls, buckets: list[AppendBucketHealth]) -> AppendHealthTotals:
        """Sum the buckets' figures."""
        return cls(
            buckets=len(buckets),
            files=sum(b.files for b in buckets),
            small_files=sum(b.small_files for b in buckets),
            max_small_files=max((b.small_files for b in buckets), default=0),
            total_bytes=sum(b.total_bytes for b in buckets),
            rows=sum(b.rows for b in buckets),
            deleted_rows=sum(b.deleted_rows for b in buckets),
        )


@dataclass(frozen=True)
class AppendTableHealth(Reported):
    """Health of every bucket of an append table and its totals; `kind` is "append"."""

    table: str
    snapshot_id: int | None
    small_file_bytes: int
    buckets: list[AppendBucketHealth]
    conflicting_compactors: ConflictingCompactors | None = None

    kind: ClassVar[str] = APPEND
    FIELDS = {
        "table": DETAIL,
        "kind": DETAIL,
        "snapshot_id": METRIC,
        "small_file_bytes": DETAIL,
        "buckets": DETAIL,
        "totals": METRIC,
        "conflicting_compactors": DETAIL,
    }

    @classmethod
    def of(
        cls, levels: TableLevels, compactors: ConflictingCompactors | None = None
    ) -> AppendTableHealth:
        """Per-bucket file metrics of `levels` and their summary, with the writers found
        compacting the table beside us.

        Raises InvalidOptionError (a malformed target-file-size or compaction.small-file-ratio).
        """
        options = levels.schema.options if levels.schema is not None else {}
        small = AppendOptions.from_table_options(options).compaction_file_size
        buckets = [
            AppendBucketHealth.of(
                b.partition.spec, b.bucket, b.levels.all_files(), small, b.deleted_rows()
            )
            for b in levels.buckets
        ]
        return cls(levels.table, levels.snapshot_id, small, buckets, compactors)

    @property
    def totals(self) -> AppendHealthTotals:
        """The buckets' figures summed (their metrics are the table's)."""
        return AppendHealthTotals.of(self.buckets)

    def aggregate(self) -> dict:
        """The totals as a dict, as checks and tests index them."""
        return self.totals.to_dict()

    def summary(self) -> str:
        """A readable table per bucket followed by the totals."""
        headers = ["partition", "bucket", "files", "small", "bytes", "rows", "deleted"]
        rows = [
            [
                b.label(),
                str(b.bucket),
                str(b.files),
                str(b.small_files),
                str(b.total_bytes),
                str(b.rows),
                str(b.deleted_rows),
            ]
            for b in self.buckets
        ]
        lines = [f"append table {self.table} at snapshot {self.snapshot_id}"]
        lines += aligned(headers, rows)
        s = self.aggregate()
        lines.append(
            f"{s['buckets']} buckets, {s['files']} files ({s['small_files']} below "
            f"{self.small_file_bytes} bytes), {s['total_bytes']} bytes, "
            f"{s['deleted_rows']} of {s['rows']} rows deleted by deletion vectors"
        )
        if self.conflicting_compactors is not None:
            lines.append(self.conflicting_compactors.warning())
        return "\n".join(lines)
