"""The health of a table of either kind, as sensors, checks and the CLI see it: figures per
bucket, their totals and a readable summary.

Buckets of both kinds count files, bytes, rows and rows deletion vectors mark. A primary-key
table's buckets are LSM trees (level 0, sorted runs, levels, size amplification); an append
table has no LSM tree (every file stays at level 0 and readers concatenate files), so what slows
its readers and what Paimon's append compaction rewrites are files below the small-file size.
A figure only the other kind has is None and left out of the report; the table's kind
(kinds/primary_key.py, kinds/append.py) measures the buckets, sums them and prints them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from dagster_paimon.lsm.model.compactors import ConflictingCompactors
from dagster_paimon.options import POSTPONE_BUCKET
from dagster_paimon.results import DETAIL, METRIC, Reported, aligned


class KindReport(Protocol):
    """What a table's kind adds to its health report: its name, its totals, its text."""

    @property
    def name(self) -> str:
        """ "primary-key" or "append", as the report's `kind`."""

    @property
    def summary_title(self) -> str:
        """What the summary calls the table: "table" or "append table"."""

    @property
    def summary_headers(self) -> Sequence[str]:
        """The summary's columns."""

    def totals(self, buckets: Sequence[BucketHealth]) -> HealthTotals:
        """The buckets' figures summed."""

    def summary_row(self, bucket: BucketHealth) -> list[str]:
        """One bucket's cells under the summary's columns."""

    def summary_footer(self, health: TableHealth) -> list[str]:
        """The lines after the buckets: the totals in words."""


@dataclass(frozen=True, kw_only=True)
class BucketHealth(Reported):
    """Figures of one bucket (an LSM tree, or bucket 0 of an unaware-bucket append table)."""

    partition: dict[str, str]
    bucket: int
    files: int
    total_bytes: int
    rows: int
    deleted_rows: int
    # an append table's
    small_files: int | None = None
    # a primary-key table's
    level0_files: int | None = None
    sorted_runs: int | None = None
    levels: dict[str, int] | None = None
    size_amplification_percent: float | None = None

    FIELDS = {
        "partition": DETAIL,
        "bucket": DETAIL,
        "files": METRIC,
        "small_files": METRIC,
        "total_bytes": METRIC,
        "level0_files": METRIC,
        "sorted_runs": METRIC,
        "levels": DETAIL,
        "size_amplification_percent": METRIC,
        "rows": METRIC,
        "deleted_rows": METRIC,
    }
    OPTIONAL = frozenset(
        {"small_files", "level0_files", "sorted_runs", "levels", "size_amplification_percent"}
    )

    @property
    def postponed(self) -> bool:
        """Whether this is a postpone bucket: parked files, not an LSM tree."""
        return self.bucket == POSTPONE_BUCKET

    def label(self) -> str:
        """K=V[,K=V] of the bucket's partition, '-' for an unpartitioned table."""
        return ",".join(f"{k}={v}" for k, v in self.partition.items()) or "-"


@dataclass(frozen=True, kw_only=True)
class HealthTotals(Reported):
    """A table's health summed over its buckets: what sensors and checks act on (maxima are 0
    for an empty table).

    Of a primary-key table, postpone buckets count as files, bytes and rows, and as the
    postponed backlog; the LSM figures (buckets, level 0, sorted runs, amplification) cover
    real buckets only.
    """

    buckets: int
    files: int
    total_bytes: int
    rows: int
    deleted_rows: int
    # an append table's
    small_files: int | None = None
    max_small_files: int | None = None
    # a primary-key table's
    level0_files: int | None = None
    max_sorted_runs: int | None = None
    mean_sorted_runs: float | None = None
    max_size_amplification_percent: float | None = None
    postponed_files: int | None = None
    postponed_rows: int | None = None

    FIELDS = {
        "buckets": DETAIL,
        "files": METRIC,
        "small_files": METRIC,
        "max_small_files": METRIC,
        "total_bytes": METRIC,
        "level0_files": METRIC,
        "max_sorted_runs": METRIC,
        "mean_sorted_runs": METRIC,
        "max_size_amplification_percent": METRIC,
        "rows": DETAIL,
        "deleted_rows": METRIC,
        "postponed_files": METRIC,
        "postponed_rows": METRIC,
    }
    OPTIONAL = frozenset(
        {
            "small_files",
            "max_small_files",
            "level0_files",
            "max_sorted_runs",
            "mean_sorted_runs",
            "max_size_amplification_percent",
            "postponed_files",
            "postponed_rows",
        }
    )


@dataclass(frozen=True, kw_only=True)
class TableHealth(Reported):
    """Health of every bucket of a table and the totals the sensors act on; `kind` says
    whether the buckets are LSM trees ("primary-key") or append files ("append")."""

    table: str
    snapshot_id: int | None
    buckets: list[BucketHealth]
    conflicting_compactors: ConflictingCompactors | None = None
    # an append table's: files below this size are small
    small_file_bytes: int | None = None
    # the table's kind, which sums and prints these figures
    reporter: KindReport = field(repr=False, compare=False)

    FIELDS = {
        "table": DETAIL,
        "kind": DETAIL,
        "snapshot_id": METRIC,
        "small_file_bytes": DETAIL,
        "buckets": DETAIL,
        "totals": METRIC,
        "conflicting_compactors": DETAIL,
    }
    OPTIONAL = frozenset({"small_file_bytes"})

    @property
    def kind(self) -> str:
        """The table's kind: "primary-key" or "append"."""
        return self.reporter.name

    @property
    def totals(self) -> HealthTotals:
        """The buckets' figures summed (their metrics are the table's)."""
        return self.reporter.totals(self.buckets)

    def aggregate(self) -> dict:
        """The totals as a dict, as checks and tests index them."""
        return self.totals.to_dict()

    def summary(self) -> str:
        """A readable table per bucket followed by the totals, and the writers compacting the
        table beside us."""
        reporter = self.reporter
        lines = [f"{reporter.summary_title} {self.table} at snapshot {self.snapshot_id}"]
        lines += aligned(
            list(reporter.summary_headers), [reporter.summary_row(b) for b in self.buckets]
        )
        lines += reporter.summary_footer(self)
        if self.conflicting_compactors is not None:
            lines.append(self.conflicting_compactors.warning())
        return "\n".join(lines)


def shared_totals(buckets: Sequence[BucketHealth]) -> dict[str, int]:
    """The totals every kind has: files, bytes, rows and deleted rows of all buckets."""
    return {
        "files": sum(b.files for b in buckets),
        "total_bytes": sum(b.total_bytes for b in buckets),
        "rows": sum(b.rows for b in buckets),
        "deleted_rows": sum(b.deleted_rows for b in buckets),
    }


@dataclass(frozen=True, kw_only=True)
class PartitionsToCompact(Reported):
    """The partitions that need compaction now by the table's triggers: what the Dagster
    sensors request, answerable from the library and the CLI too."""

    table: str
    snapshot_id: int | None
    partitions: tuple[dict[str, str], ...]

    FIELDS = {"table": DETAIL, "snapshot_id": DETAIL, "partitions": METRIC}

    def summary(self) -> str:
        """One line per partition due, or that none is."""
        if not self.partitions:
            return f"{self.table}: no partition needs compaction (snapshot {self.snapshot_id})"
        named = [
            ",".join(f"{k}={v}" for k, v in p.items()) or "(whole table)" for p in self.partitions
        ]
        return "\n".join(
            [
                f"{self.table}: {len(named)} partition(s) need compaction (snapshot "
                f"{self.snapshot_id})",
                *(f"  {n}" for n in named),
            ]
        )
