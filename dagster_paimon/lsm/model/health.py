"""Health of LSM trees: sorted runs and size amplification, as sensors, checks and CLI see it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from dagster_paimon.lsm.model.runs import LevelSortedRun, run_size
from dagster_paimon.options import POSTPONE_BUCKET
from dagster_paimon.results import Metrics

if TYPE_CHECKING:
    from dagster_paimon.lsm.model.levels import Levels

SNAPSHOT_ID = "snapshot_id"
FILES = "files"
TOTAL_BYTES = "total_bytes"
MAX_SORTED_RUNS = "max_sorted_runs"
MEAN_SORTED_RUNS = "mean_sorted_runs"
MAX_SIZE_AMP = "max_size_amplification_percent"
DELETED_ROWS = "deleted_rows"
LEVEL0_FILES = "level0_files"
POSTPONED_FILES = "postponed_files"
POSTPONED_ROWS = "postponed_rows"


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

    @classmethod
    def of(
        cls,
        partition: dict[str, str],
        bucket: int,
        levels: Levels,
        deleted: Mapping[str, int] | None = None,
    ) -> BucketHealth:
        """Measure one tree; `deleted` counts the rows deletion vectors mark, per file.

        Size amplification compares file bytes, as Paimon's pickForSizeAmp does: rows a
        deletion vector marks still take their bytes until a compaction rewrites the file.
        """
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
            rows=sum(f.row_count for r in runs for f in r.run.files),
            deleted_rows=sum((deleted or {}).values()),
        )

    def to_dict(self) -> dict:
        """One bucket of the health JSON."""
        return {
            "partition": dict(self.partition),
            "bucket": self.bucket,
            "files": self.files,
            "total_bytes": self.total_bytes,
            "level0_files": self.level0_files,
            "sorted_runs": self.sorted_runs,
            "levels": dict(self.levels),
            "size_amplification_percent": self.size_amplification_percent,
            "rows": self.rows,
            "deleted_rows": self.deleted_rows,
        }

    @property
    def postponed(self) -> bool:
        """Whether this is a postpone bucket: parked files, not an LSM tree."""
        return self.bucket == POSTPONE_BUCKET

    def label(self) -> str:
        """K=V[,K=V] of the bucket's partition, '-' for an unpartitioned table."""
        return ",".join(f"{k}={v}" for k, v in self.partition.items()) or "-"


@dataclass(frozen=True)
class TableHealth:
    """Health of every bucket of a table and an aggregate the sensors act on."""

    table: str
    snapshot_id: int | None
    buckets: list[BucketHealth]

    def aggregate(self) -> dict:
        """Aggregates over buckets; maxima are 0 for an empty table.

        Postpone buckets count as files, bytes and rows, and as the postponed backlog; the
        LSM figures (buckets, level 0, sorted runs, amplification) cover real buckets only.
        """
        trees = [b for b in self.buckets if not b.postponed]
        parked = [b for b in self.buckets if b.postponed]
        runs = [b.sorted_runs for b in trees]
        return {
            "buckets": len(trees),
            "files": sum(b.files for b in self.buckets),
            "total_bytes": sum(b.total_bytes for b in self.buckets),
            "level0_files": sum(b.level0_files for b in trees),
            "max_sorted_runs": max(runs, default=0),
            "mean_sorted_runs": round(sum(runs) / len(runs), 2) if runs else 0.0,
            "max_size_amplification_percent": max(
                (b.size_amplification_percent for b in trees), default=0.0
            ),
            "rows": sum(b.rows for b in self.buckets),
            "deleted_rows": sum(b.deleted_rows for b in self.buckets),
            "postponed_files": sum(b.files for b in parked),
            "postponed_rows": sum(b.rows for b in parked),
        }

    def metrics(self) -> Metrics:
        """Flat metrics for orchestration UIs to show and plot."""
        aggregate = self.aggregate()
        return {
            SNAPSHOT_ID: self.snapshot_id,
            FILES: aggregate["files"],
            TOTAL_BYTES: aggregate["total_bytes"],
            MAX_SORTED_RUNS: aggregate["max_sorted_runs"],
            MEAN_SORTED_RUNS: aggregate["mean_sorted_runs"],
            MAX_SIZE_AMP: aggregate["max_size_amplification_percent"],
            LEVEL0_FILES: aggregate["level0_files"],
            DELETED_ROWS: aggregate["deleted_rows"],
            POSTPONED_FILES: aggregate["postponed_files"],
            POSTPONED_ROWS: aggregate["postponed_rows"],
        }

    def to_dict(self) -> dict:
        """The health JSON of the CLI contract."""
        return {
            "table": self.table,
            "snapshot_id": self.snapshot_id,
            "buckets": [b.to_dict() for b in self.buckets],
            "summary": self.aggregate(),
        }

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
        widths = [max(len(r[i]) for r in [headers, *rows]) for i in range(len(headers))]
        lines = [f"table {self.table} at snapshot {self.snapshot_id}"]
        lines += [
            "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in [headers, *rows]
        ]
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
        return "\n".join(lines)
