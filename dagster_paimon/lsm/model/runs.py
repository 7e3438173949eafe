"""Value types shared by levels, strategies and plans, named as in Paimon's Java code."""

from __future__ import annotations

from dataclasses import dataclass, field

from dagster_paimon.format.manifest import DataFileMeta
from dagster_paimon.format.runs import SortedRun

__all__ = ["CompactUnit", "LevelSortedRun", "SortedRun", "run_size", "size_amplification_percent"]


def run_size(run: SortedRun) -> int:
    """Bytes of a sorted run: what size amplification and size ratio compare."""
    return sum(f.file_size for f in run.files)


@dataclass(frozen=True)
class LevelSortedRun:
    """A sorted run together with the level it lives on."""

    level: int
    run: SortedRun

    def total_size(self) -> int:
        """Bytes of the run, mirroring Java's LevelSortedRun.run().totalSize()."""
        return run_size(self.run)


def size_amplification_percent(runs: list[LevelSortedRun]) -> float:
    """100 x bytes of all runs but the last / bytes of the last run; 0 below two runs."""
    if len(runs) < 2:
        return 0.0
    last = runs[-1].total_size()
    if last == 0:
        return 0.0
    return 100.0 * sum(r.total_size() for r in runs[:-1]) / last


@dataclass(frozen=True)
class CompactUnit:
    """Files picked for one compaction and the level their output goes to."""

    output_level: int
    files: list[DataFileMeta] = field(default_factory=list)
    file_rewrite: bool = False

    @classmethod
    def from_level_runs(cls, output_level: int, runs: list[LevelSortedRun]) -> CompactUnit:
        """All files of the given runs, in run order, as Java's CompactUnit.fromLevelRuns."""
        return cls(output_level, [f for r in runs for f in r.run.files])

    @classmethod
    def from_files(
        cls, output_level: int, files: list[DataFileMeta], file_rewrite: bool = False
    ) -> CompactUnit:
        """A unit over explicit files, as Java's CompactUnit.fromFiles."""
        return cls(output_level, list(files), file_rewrite)
