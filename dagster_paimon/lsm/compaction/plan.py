"""CompactUnit -> TaskPlan: what Paimon's MergeTreeCompactTask would merge, upgrade or leave alone.

Planning reads metadata only. The plan is a frozen value of pypaimon DataFileMeta and SortedRun,
so it pickles to Spark executors; executing it (merge, roll files, commit) lives elsewhere.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from dagster_paimon.errors import InternalError
from dagster_paimon.format.manifest import DataFileMeta
from dagster_paimon.format.runs import IntervalPartition
from dagster_paimon.io.index import VectorIndex
from dagster_paimon.lsm.compaction.rewriter import LOOKUP, Rewriter, contains_delete_records
from dagster_paimon.lsm.model.levels import Levels
from dagster_paimon.lsm.model.options import CompactionOptions
from dagster_paimon.lsm.model.runs import CompactUnit, SortedRun
from dagster_paimon.partition import Partition

__all__ = ["RewriteGroup", "Section", "TaskPlan", "Upgrade", "plan_task"]

Section = tuple[SortedRun, ...]


@dataclass(frozen=True)
class RewriteGroup:
    """Sections merged into ONE output stream at the task's output level: one rewriter.rewrite.

    `changelog` runs the merge through the rewriter's wrapper (lookups, deletion vectors,
    changelog); `drop_delete` drops retractions from the output.
    """

    sections: tuple[Section, ...]
    drop_delete: bool = False
    changelog: bool = False

    @classmethod
    def alone(cls, file: DataFileMeta, *, drop_delete: bool, changelog: bool) -> RewriteGroup:
        """One file rewritten by itself, as Java wraps it: one section of one single-file run."""
        return cls(((SortedRun(files=[file]),),), drop_delete, changelog)

    @property
    def files(self) -> tuple[DataFileMeta, ...]:
        """Every input file, section by section and run by run (the CompactResult 'before')."""
        return tuple(f for section in self.sections for run in section for f in run.files)


@dataclass(frozen=True)
class Upgrade:
    """A move of one file to another level: Java's DataFileMeta.upgrade.

    With `scan` the file's records still go through the rewriter's wrapper first (Java's
    CHANGELOG_NO_REWRITE): lookups mark deletion vectors and the changelog is written.
    """

    file: DataFileMeta
    output_level: int
    scan: bool = False

    def __post_init__(self) -> None:
        """An upgrade to the level the file already has is a no-op Java never records."""
        if self.file.level == self.output_level:
            raise InternalError(f"{self.file.file_name} is already at level {self.output_level}")

    def upgraded_file(self) -> DataFileMeta:
        """The file's metadata at its new level; name, source, sequences and stats are kept."""
        return replace(self.file, level=self.output_level)


@dataclass(frozen=True)
class TaskPlan:
    """One bucket's CompactTask decided but not run: rewrite groups, upgrades, untouched rest."""

    partition: Partition
    bucket: int
    total_buckets: int
    output_level: int
    drop_delete: bool
    files: tuple[DataFileMeta, ...]
    rewrites: tuple[RewriteGroup, ...]
    upgrades: tuple[Upgrade, ...]
    rewriter: Rewriter
    lookup_levels: tuple[tuple[int, tuple[DataFileMeta, ...]], ...] = ()
    dv_index: VectorIndex | None = None

    @property
    def rewritten_files(self) -> tuple[DataFileMeta, ...]:
        """Files the executor reads and replaces, in rewrite order."""
        return tuple(f for group in self.rewrites for f in group.files)

    @property
    def upgraded_files(self) -> tuple[DataFileMeta, ...]:
        """Files that only change level (before the change)."""
        return tuple(u.file for u in self.upgrades)

    @property
    def input_bytes(self) -> int:
        """Bytes of every file the unit picked."""
        return sum(f.file_size for f in self.files)

    @property
    def rewritten_bytes(self) -> int:
        """Bytes the executor must read; upgrades read nothing."""
        return sum(f.file_size for f in self.rewritten_files)

    @property
    def is_empty(self) -> bool:
        """True when running the task would change nothing, so it needs no executor or commit."""
        return not self.rewrites and not self.upgrades

    def to_dict(self) -> dict[str, Any]:
        """The per-unit JSON of `dagster-paimon compact` before execution."""
        return {
            "partition": self.partition.spec,
            "bucket": self.bucket,
            "output_level": self.output_level,
            "drop_delete": self.drop_delete,
            "input_files": len(self.files),
            "rewritten_files": len(self.rewritten_files),
            "upgraded_files": len(self.upgrades),
            "input_bytes": self.input_bytes,
            "rewritten_bytes": self.rewritten_bytes,
            "input_file_names": [f.file_name for f in self.files],
            "rewrite_groups": [[f.file_name for f in g.files] for g in self.rewrites],
            "upgraded_file_names": [f.file_name for f in self.upgraded_files],
            "changelog_groups": sum(1 for g in self.rewrites if g.changelog),
            "scanned_upgrades": sum(1 for u in self.upgrades if u.scan),
        }

    @property
    def uses_lookup(self) -> bool:
        """Whether executing it looks keys up in the levels above the output."""
        return self.rewriter.kind == LOOKUP and (
            any(g.changelog for g in self.rewrites) or any(u.scan for u in self.upgrades)
        )


class _MergeTreeCompactPlanner:
    """MergeTreeCompactTask.doCompact with the rewriter calls recorded instead of run."""

    def __init__(
        self,
        output_level: int,
        max_level: int,
        min_file_size: int,
        must_rewrite: Callable[[DataFileMeta], bool],
        rewriter: Rewriter,
        drop_delete: bool,
    ):
        self.output_level = output_level
        self.max_level = max_level
        self.min_file_size = min_file_size
        self.must_rewrite = must_rewrite
        self.rewriter = rewriter
        self.drop_delete = drop_delete
        self.rewrites: list[RewriteGroup] = []
        self.upgrades: list[Upgrade] = []

    def do_compact(self, files: list[DataFileMeta]) -> None:
        """Walk sections in key order; overlapping ones and small files merge, big files move."""
        candidate: list[Section] = []
        for section in IntervalPartition(files).partition():
            if len(section) > 1:
                candidate.append(tuple(section))
                continue
            for file in section[0].files:
                if file.file_size < self.min_file_size:
                    candidate.append((SortedRun(files=[file]),))
                else:
                    # A file may not be skipped over: flush what precedes it to keep key order.
                    self._rewrite(candidate)
                    self._upgrade(file)
        self._rewrite(candidate)

    def _rewrite(self, candidate: list[Section]) -> None:
        """Merge the candidates into one stream, unless they are a lone run (then upgrade it)."""
        if not candidate:
            return
        if len(candidate) == 1 and len(candidate[0]) == 1:
            for file in candidate[0][0].files:
                self._upgrade(file)
        else:
            group = RewriteGroup(tuple(candidate), self.drop_delete)
            changelog = self.rewriter.changelog_rewrite(self.output_level, group.files)
            self.rewrites.append(replace(group, changelog=changelog))
        candidate.clear()

    def _upgrade(self, file: DataFileMeta) -> None:
        """Rewrite alone what must not keep its records as they are, else move it if needed."""
        if (
            self.output_level == self.max_level and contains_delete_records(file)
        ) or self.must_rewrite(file):
            changelog = self.rewriter.changelog_rewrite(self.output_level, [file])
            self.rewrites.append(
                RewriteGroup.alone(file, drop_delete=self.drop_delete, changelog=changelog)
            )
        elif file.level != self.output_level:
            through_wrapper, rewrite = self.rewriter.upgrade_strategy(self.output_level, file)
            if through_wrapper and rewrite:
                self.rewrites.append(
                    RewriteGroup.alone(
                        file, drop_delete=self.rewriter.force_drop_delete, changelog=True
                    )
                )
            else:
                self.upgrades.append(Upgrade(file, self.output_level, scan=through_wrapper))


def plan_task(
    unit: CompactUnit,
    *,
    max_level: int,
    drop_delete: bool,
    options: CompactionOptions,
    partition: Partition,
    bucket: int,
    total_buckets: int,
    record_level_expire: bool | Callable[[DataFileMeta], bool] | None = None,
    levels: Levels | None = None,
    dv_index: VectorIndex | None = None,
) -> TaskPlan:
    """Plan a unit as Java's FileRewriteCompactTask (file_rewrite) or MergeTreeCompactTask would.

    `drop_delete` is the trigger's decision (strategy.drop_delete).
    `record_level_expire` is RecordLevelExpire.isExpireFile as a per-file check, or a bool for
    every file (as strategy.pick_full_compaction takes it); it must be given when
    record-level.expire-time is set, since only the caller knows the time field's statistics.
    `levels` (the bucket's tree) gives lookups the files above the output; `dv_index` is the
    bucket's deletion-vector index files.
    """
    rewriter = Rewriter.for_options(options)
    if not 0 <= unit.output_level <= max_level:
        raise InternalError(f"output level {unit.output_level} is outside 0..{max_level}")
    if options.record_level_expire_time_ms is not None and record_level_expire is None:
        raise InternalError("record-level.expire-time is set: pass record_level_expire")
    files = tuple(unit.files)
    if unit.file_rewrite:
        rewrites = tuple(
            RewriteGroup.alone(
                f,
                drop_delete=drop_delete,
                changelog=rewriter.changelog_rewrite(unit.output_level, [f]),
            )
            for f in files
        )
        upgrades: tuple[Upgrade, ...] = ()
    else:
        expired = (
            record_level_expire
            if callable(record_level_expire)
            else lambda _file: bool(record_level_expire)
        )
        planner = _MergeTreeCompactPlanner(
            unit.output_level,
            max_level,
            options.min_file_size,
            lambda f: options.force_rewrite_all_files or expired(f),
            rewriter,
            drop_delete,
        )
        planner.do_compact(list(files))
        rewrites, upgrades = tuple(planner.rewrites), tuple(planner.upgrades)
    above: tuple[tuple[int, tuple[DataFileMeta, ...]], ...] = ()
    if levels is not None and rewriter.kind == LOOKUP:
        above = tuple(
            (level, tuple(levels.levels[level - 1].files))
            for level in range(unit.output_level + 1, levels.number_of_levels())
            if levels.levels[level - 1].files
        )
    return TaskPlan(
        partition=partition,
        bucket=bucket,
        total_buckets=total_buckets,
        output_level=unit.output_level,
        drop_delete=drop_delete,
        files=files,
        rewrites=rewrites,
        upgrades=upgrades,
        rewriter=rewriter,
        lookup_levels=above,
        dv_index=dv_index,
    )
