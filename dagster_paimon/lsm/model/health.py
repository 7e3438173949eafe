"""Health of LSM trees: sorted runs and size amplification, as sensors, checks and CLI see it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from dagster_paimon.lsm.model.compactors import ConflictingCompactors
from dagster_paimon.lsm.model.runs import LevelSortedRun, run_size
from dagster_paimon.options import POSTPONE_BUCKET
from dagster_paimon.results import DETAIL, METRIC, Reported, aligned
from dagster_paimon.table import PRIMARY_KEY


def size_amplification_percent(runs: list[LevelSortedRun]) -> float:
    """100 x bytes of all runs but the last / bytes of the last run; 0 below two runs."""
    if len(runs) < 2:
        return 0.0
    last = runs[-1].total_size()
    if last == 0:
        return 0.0
    return 100.0 * sum(r.total_size() for r in runs[:-1]) / last


@dataclass(frozen=True)
class BucketHealth(Reported):
    """Metrics of one LSM tree."""

    partition: dict[str, str]
    bucket: int
    files: int
    total_bytes: int
    level0_files: int
    sorted_runs: int
    levels: dict[str, int]
    size_amplification_percent: float
    rows: int = 0
    deleted_rows: int = 0

    FIELDS = {
        "partition": DETAIL,
        "bucket": DETAIL,
        "files": METRIC,
        "total_bytes": METRIC,
        "level0_files": METRIC,
        "sorted_runs": METRIC,
        "levels": DETAIL,
        "size_amplification_percent": METRIC,
        "rows": METRIC,
        "deleted_rows": METRIC,
    }

    @classmethod
    def of(
        cls,
        partition: dict[str, str],
        bucket: int,
        runs: list[LevelSortedRun],
        deleted: Mapping[str, int] | None = None,
    ) -> BucketHealth:
        """Measure one tree from its sorted runs (Levels.level_sorted_runs: each level-0 file,
        then the non-empty levels); `deleted` counts the rows deletion vectors mark, per file.

        Size amplification compares file bytes, as Paimon's pickForSizeAmp does: rows a
        deletion vector marks still take their bytes until a compaction rewrites the file.
        """
        level0 = sum(1 for r in runs if r.level == 0)
        per_level = {"0": level0}
        per_level.update({str(r.level): len(r.run.files) for r in runs if r.level > 0})
        return cls(
            partition=partition,
            bucket=bucket,
            files=sum(per_level.values()),
            total_bytes=sum(run_size(r.run) for r in runs),
            level0_files=level0,
            sorted_runs=len(runs),
            levels={k: v for k, v in per_level.items() if v},
            size_amplification_percent=round(size_amplification_percent(runs), 2),
            rows=sum(f.row_count for r in runs for f in r.run.files),
            deleted_rows=sum((deleted or {}).values()),
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
    """A table's health summed over its buckets: what sensors and checks act on.

    Postpone buckets count as files, bytes and rows, and as the postponed backlog; the LSM
    figures (buckets, level 0, sorted runs, amplification) cover real buckets only. Maxima are 0
    for an empty table.
    """

    buckets: int
    files: int
    total_bytes: int
    level0_files: int
    max_sorted_runs: int
    mean_sorted_runs: float
    max_size_amplification_percent: float
    rows: int
    deleted_rows: int
    postponed_files: int
    postponed_rows: int

    FIELDS = {
        "buckets": DETAIL,
        "files": METRIC,
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

    @classmethod
    def of(cls, buckets: list[BucketHealth]) -> HealthTotals:
        """Sum the buckets' figures."""
        trees = [b for b in buckets if not b.postponed]
        parked = [b for b in buckets if b.postponed]
        runs = [b.sorted_runs for b in trees]
        return cls(
            buckets=len(trees),
            files=sum(b.files for b in buckets),
            total_bytes=sum(b.total_bytes for b in buckets),
            level0_files=sum(b.level0_files for b in trees),
            max_sorted_runs=max(runs, default=0),
            mean_sorted_runs=round(sum(runs) / len(runs), 2) if runs else 0.0,
            max_size_amplification_percent=max(
                (b.size_amplification_percent for b in trees), default=0.0
            ),
            rows=sum(b.rows for b in buckets),
            deleted_rows=sum(b.deleted_rows for b in buckets),
            postponed_files=sum(b.files for b in parked),
            postponed_rows=sum(b.rows for b in parked),
        )


@dataclass(frozen=True)
class TableHealth(Reported):
    """Health of every LSM tree of a primary-key table and the totals the sensors act on;
    `kind` is "primary-key" (kinds/primary_key.py reports it)."""

    table: str
    snapshot_id: int | None
    buckets: list[BucketHealth]
    conflicting_compactors: ConflictingCompactors | None = None

    kind: ClassVar[str] = PRIMARY_KEY
    FIELDS = {
        "table": DETAIL,
        "kind": DETAIL,
        "snapshot_id": METRIC,
        "buckets": DETAIL,
        "totals": METRIC,
        "conflicting_compactors": DETAIL,
    }

    @property
    def totals(self) -> HealthTotals:
        """The buckets' figures summed (their metrics are the table's)."""
        return HealthTotals.of(self.buckets)

    def aggregate(self) -> dict:
        """The totals as a dict, as checks and tests index them."""
        return self.totals.to_dict()

    def summary(self) -> str:
        """A readable table per bucket followed by the aggregate."""
        headers = ["partition", "bucket", "files", "bytes", "L0", "runs", "levels", "size-amp %"]
        rows = [
            [
                b.label(),
                "postpone" if b.postponed else str(b.bucket),
                str(b.files),
                str(b.total_bytes),
                str(b.level0_files),
                str(b.sorted_runs),
                " ".join(f"L{k}:{v}" for k, v in b.levels.items()),
                f"{b.size_amplification_percent:.1f}",
            ]
            for b in self.buckets
        ]
        lines = [f"table {self.table} at snapshot {self.snapshot_id}"]
        lines += aligned(headers, rows)
        s = self.aggregate()
        lines.append(
            f"{s['buckets']} buckets, {s['files']} files, {s['total_bytes']} bytes, "
            f"max sorted runs {s['max_sorted_runs']}, "
            f"max size amplification {s['max_size_amplification_percent']:.1f}%, "
            f"{s['deleted_rows']} of {s['rows']} rows deleted by deletion vectors"
        )
        if s["postponed_files"]:
            lines.append(
                f"{s['postponed_rows']} rows in {s['postponed_files']} postpone-bucket files wait "
                "for a compaction to move them into real buckets"
            )
        if self.conflicting_compactors is not None:
            lines.append(self.conflicting_compactors.warning())
        return "\n".join(lines)
