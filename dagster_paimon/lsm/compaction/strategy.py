"""Paimon's compaction decisions: which sorted runs to merge, and into which level.

A port of the behaviour of Java's UniversalCompaction, EarlyFullCompaction, OffPeakHours,
ForceUpLevel0Compaction, CompactStrategy.pickFullCompaction and the picking step of
MergeTreeCompactManager.triggerCompaction, so a bucket compacted here ends up with the same
levels Paimon itself would have produced.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Iterable, Sequence
from datetime import datetime, timedelta
from typing import Protocol

from dagster_paimon.errors import InvalidOptionError
from dagster_paimon.format.manifest import DataFileMeta
from dagster_paimon.lsm.model.options import CompactionOptions
from dagster_paimon.lsm.model.runs import CompactUnit, LevelSortedRun, SortedRun
from dagster_paimon.options import WRITE_ONLY

__all__ = [
    "CompactStrategy",
    "CompactUnit",
    "EarlyFullCompaction",
    "ForceUpLevel0Compaction",
    "LevelSortedRun",
    "OffPeakHours",
    "SortedRun",
    "UniversalCompaction",
    "creation_epoch_millis",
    "drop_delete",
    "estimate_last_full_compaction_ms",
    "lookup_compact_max_interval",
    "pick_full_compaction",
    "strategy_from_options",
    "trigger_compaction",
]

Clock = Callable[[], int]
ExpiryCheck = Callable[[DataFileMeta], bool]


def wall_clock_ms() -> int:
    """Epoch milliseconds, as Java's System.currentTimeMillis()."""
    return time.time_ns() // 1_000_000


def local_hour() -> int:
    """Hour of the local wall clock, as Java's LocalDateTime.now().getHour()."""
    return datetime.now().hour


def creation_epoch_millis(file: DataFileMeta) -> int | None:
    """Creation times hold local wall-clock time; Java reads them back in the system zone."""
    if file.creation_time is None:
        return None
    local = file.creation_time.to_local_date_time()
    offset = local.astimezone().utcoffset() or timedelta(0)
    return file.creation_time.get_millisecond() - offset // timedelta(milliseconds=1)


def _total_size(runs: Iterable[LevelSortedRun]) -> int:
    """Bytes of several runs together."""
    return sum(r.total_size() for r in runs)


class CompactStrategy(Protocol):
    """Anything that can pick the next compaction unit from a bucket's sorted runs."""

    def pick(self, num_levels: int, runs: Sequence[LevelSortedRun]) -> CompactUnit | None:
        """The unit to compact next, or None to leave the bucket alone."""
        ...


class OffPeakHours:
    """A window of hours in which size-ratio compaction may merge more eagerly."""

    def __init__(self, start_hour: int, end_hour: int, compact_off_peak_ratio: int) -> None:
        self.start_hour = start_hour
        self.end_hour = end_hour
        self.compact_off_peak_ratio = compact_off_peak_ratio

    @classmethod
    def create(cls, start_hour: int, end_hour: int, ratio: int) -> OffPeakHours | None:
        """None when either hour is unset (-1) or the window is empty (start == end)."""
        if start_hour == -1 or end_hour == -1 or start_hour == end_hour:
            return None
        return cls(start_hour, end_hour, ratio)

    @classmethod
    def from_options(cls, options: CompactionOptions) -> OffPeakHours | None:
        """The window configured by compaction.offpeak.* options, if any."""
        return cls.create(
            options.offpeak_start_hour, options.offpeak_end_hour, options.offpeak_ratio
        )

    def current_ratio(self, hour: int) -> int:
        """Extra size ratio at this hour; the window is [start, end) and may wrap midnight."""
        if self.start_hour <= self.end_hour:
            off_peak = self.start_hour <= hour < self.end_hour
        else:
            off_peak = hour < self.end_hour or self.start_hour <= hour
        return self.compact_off_peak_ratio if off_peak else 0


class EarlyFullCompaction:
    """Full compaction before size amplification demands it: by interval or by size."""

    def __init__(
        self,
        full_compaction_interval_ms: int | None = None,
        total_size_threshold: int | None = None,
        incremental_size_threshold: int | None = None,
        last_full_compaction_ms: int | None = None,
        now_ms: Clock = wall_clock_ms,
    ) -> None:
        self.full_compaction_interval_ms = full_compaction_interval_ms
        self.total_size_threshold = total_size_threshold
        self.incremental_size_threshold = incremental_size_threshold
        self.last_full_compaction_ms = last_full_compaction_ms
        self._now_ms = now_ms

    @classmethod
    def from_options(
        cls,
        options: CompactionOptions,
        initial_last_full_compaction_ms: int | None = None,
        now_ms: Clock = wall_clock_ms,
    ) -> EarlyFullCompaction | None:
        """None unless an optimization interval or a size threshold is configured."""
        interval = options.optimization_interval_ms
        total = options.total_size_threshold
        incremental = options.incremental_size_threshold
        if interval is None and total is None and incremental is None:
            return None
        return cls(interval, total, incremental, initial_last_full_compaction_ms, now_ms)

    def try_full_compact(
        self, num_levels: int, runs: Sequence[LevelSortedRun]
    ) -> CompactUnit | None:
        """All runs to the max level when any configured condition holds; one run never."""
        if len(runs) == 1 or not self._due(num_levels - 1, runs):
            return None
        self.update_last_full_compaction()
        return CompactUnit.from_level_runs(num_levels - 1, list(runs))

    def _due(self, max_level: int, runs: Sequence[LevelSortedRun]) -> bool:
        """Interval elapsed, bucket small in total, or too much data above the max level."""
        interval = self.full_compaction_interval_ms
        if interval is not None and (
            self.last_full_compaction_ms is None
            or self._now_ms() - self.last_full_compaction_ms > interval
        ):
            return True
        total = self.total_size_threshold
        if total is not None and _total_size(runs) < total:
            return True
        incremental = self.incremental_size_threshold
        return (
            incremental is not None
            and _total_size(r for r in runs if r.level != max_level) > incremental
        )

    def update_last_full_compaction(self) -> None:
        """Restart the interval: any full compaction counts, whoever picked it."""
        self.last_full_compaction_ms = self._now_ms()


class UniversalCompaction:
    """RocksDB-style universal compaction: low write amplification, bounded space overhead."""

    def __init__(
        self,
        max_size_amp: int,
        size_ratio: int,
        num_run_compaction_trigger: int,
        early_full_compaction: EarlyFullCompaction | None = None,
        off_peak_hours: OffPeakHours | None = None,
        hour_of_day: Clock = local_hour,
    ) -> None:
        self.max_size_amp = max_size_amp
        self.size_ratio = size_ratio
        self.num_run_compaction_trigger = num_run_compaction_trigger
        self.early_full_compaction = early_full_compaction
        self.off_peak_hours = off_peak_hours
        self._hour_of_day = hour_of_day

    def pick(self, num_levels: int, runs: Sequence[LevelSortedRun]) -> CompactUnit | None:
        """Early full, then size amplification, then size ratio, then sorted-run count."""
        max_level = num_levels - 1
        if self.early_full_compaction is not None:
            unit = self.early_full_compaction.try_full_compact(num_levels, runs)
            if unit is not None:
                return unit
        unit = self.pick_for_size_amp(max_level, runs)
        if unit is None:
            unit = self.pick_for_size_ratio(max_level, runs)
        if unit is None and len(runs) > self.num_run_compaction_trigger:
            candidate_count = len(runs) - self.num_run_compaction_trigger + 1
            unit = self.pick_for_size_ratio(max_level, runs, candidate_count)
        return unit

    def force_pick_l0(self, num_levels: int, runs: Sequence[LevelSortedRun]) -> CompactUnit | None:
        """Push every level-0 run up, for tables whose readers must not see level 0."""
        candidate_count = 0
        for run in runs:
            if run.level > 0:
                break
            candidate_count += 1
        if candidate_count == 0:
            return None
        return self.pick_for_size_ratio(num_levels - 1, runs, candidate_count, force_pick=True)

    def pick_for_size_amp(
        self, max_level: int, runs: Sequence[LevelSortedRun]
    ) -> CompactUnit | None:
        """Full compaction once newer runs exceed max_size_amp percent of the oldest run."""
        if len(runs) < self.num_run_compaction_trigger:
            return None
        candidate_size = _total_size(runs[:-1])
        earliest_run_size = runs[-1].total_size()
        if candidate_size * 100 > self.max_size_amp * earliest_run_size:
            self._mark_full_compaction()
            return CompactUnit.from_level_runs(max_level, list(runs))
        return None

    def pick_for_size_ratio(
        self,
        max_level: int,
        runs: Sequence[LevelSortedRun],
        candidate_count: int | None = None,
        force_pick: bool = False,
    ) -> CompactUnit | None:
        """Grow the newest runs while the next run is not much bigger than them together.

        Without candidate_count this is Java's two-argument form: nothing below the trigger,
        else start from one run. Once triggered, level 0 and 1 runs are absorbed regardless.
        """
        if candidate_count is None:
            if len(runs) < self.num_run_compaction_trigger:
                return None
            candidate_count = 1
        candidate_size = _total_size(runs[:candidate_count])
        triggered = force_pick or candidate_count > 1
        for nxt in runs[candidate_count:]:
            next_size = nxt.total_size()
            if self._outgrows(candidate_size, next_size) and (not triggered or nxt.level > 1):
                break
            candidate_size += next_size
            candidate_count += 1
            triggered = True
        return self.create_unit(runs, max_level, candidate_count) if triggered else None

    def create_unit(
        self, runs: Sequence[LevelSortedRun], max_level: int, run_count: int
    ) -> CompactUnit:
        """The first run_count runs, output just below the next run and never to level 0."""
        last = run_count == len(runs)
        output_level = max_level if last else max(0, runs[run_count].level - 1)
        if output_level == 0:
            for nxt in runs[run_count:]:
                run_count += 1
                if nxt.level != 0:
                    output_level = nxt.level
                    break
        if run_count == len(runs):
            self._mark_full_compaction()
            output_level = max_level
        return CompactUnit.from_level_runs(output_level, list(runs[:run_count]))

    def _outgrows(self, candidate_size: int, next_size: int) -> bool:
        """Java's double comparison: next run bigger than candidates times (100 + ratio)%."""
        ratio = 100.0 + self.size_ratio + self._ratio_for_off_peak()
        return candidate_size * ratio / 100.0 < float(next_size)

    def _ratio_for_off_peak(self) -> int:
        """Extra size ratio granted right now by the off-peak window."""
        if self.off_peak_hours is None:
            return 0
        return self.off_peak_hours.current_ratio(self._hour_of_day())

    def _mark_full_compaction(self) -> None:
        """A pick that covers every run restarts the early-full-compaction interval."""
        if self.early_full_compaction is not None:
            self.early_full_compaction.update_last_full_compaction()


class ForceUpLevel0Compaction:
    """Universal compaction that also empties level 0, for lookup-based tables."""

    def __init__(self, universal: UniversalCompaction, max_compact_interval: int | None) -> None:
        self.universal = universal
        self.max_compact_interval = max_compact_interval
        self._compact_trigger_count = 0

    def pick(self, num_levels: int, runs: Sequence[LevelSortedRun]) -> CompactUnit | None:
        """Universal's pick; failing that, lift level 0 now (radical) or every Nth call (gentle)."""
        unit = self.universal.pick(num_levels, runs)
        if unit is not None:
            return unit
        if self.max_compact_interval is None:
            return self.universal.force_pick_l0(num_levels, runs)
        self._compact_trigger_count += 1
        if self._compact_trigger_count == self.max_compact_interval:
            self._compact_trigger_count = 0
            return self.universal.force_pick_l0(num_levels, runs)
        return None


def estimate_last_full_compaction_ms(files: Iterable[DataFileMeta], num_levels: int) -> int | None:
    """Newest creation time at the max level: when the last full compaction likely ran."""
    max_level = num_levels - 1
    latest = -1
    for f in files:
        created = creation_epoch_millis(f) if f.level == max_level else None
        if created is not None and created > latest:
            latest = created
    return None if latest < 0 else latest


def lookup_compact_max_interval(options: CompactionOptions) -> int:
    """Gentle lookup compaction's period: the option or twice the trigger, at least the trigger."""
    trigger = options.num_sorted_run_compaction_trigger
    configured = options.lookup_compact_max_interval
    return max(trigger, trigger * 2 if configured is None else configured)


def strategy_from_options(
    options: CompactionOptions,
    restore_files: Iterable[DataFileMeta] = (),
    now_ms: Clock = wall_clock_ms,
    hour_of_day: Clock = local_hour,
) -> CompactStrategy | None:
    """The strategy Paimon would use for these options; None when the table is write-only."""
    if options.write_only:
        return None
    universal = UniversalCompaction(
        options.max_size_amplification_percent,
        options.size_ratio,
        options.num_sorted_run_compaction_trigger,
        EarlyFullCompaction.from_options(
            options,
            estimate_last_full_compaction_ms(restore_files, options.num_levels),
            now_ms,
        ),
        OffPeakHours.from_options(options),
        hour_of_day,
    )
    if options.needs_lookup:
        gentle = options.lookup_compact == "gentle"
        return ForceUpLevel0Compaction(
            universal, lookup_compact_max_interval(options) if gentle else None
        )
    if options.force_up_level_0:
        return ForceUpLevel0Compaction(universal, None)
    return universal


def _expiry_check(record_level_expire: bool | ExpiryCheck) -> ExpiryCheck:
    """A per-file check; a plain bool applies to every file alike."""
    if callable(record_level_expire):
        return record_level_expire
    return lambda _file: record_level_expire


def pick_full_compaction(
    num_levels: int,
    runs: Sequence[LevelSortedRun],
    force_rewrite_all_files: bool = False,
    record_level_expire: bool | ExpiryCheck = False,
    dv_files: Collection[str] | None = None,
) -> CompactUnit | None:
    """Everything to the max level; a lone max-level run only rewrites files that need it.

    record_level_expire is either a per-file check (Java's RecordLevelExpire.isExpireFile) or
    a bool for all files; dv_files names the files that carry a deletion vector.
    """
    max_level = num_levels - 1
    if not runs:
        return None
    if len(runs) == 1 and runs[0].level == max_level:
        expired = _expiry_check(record_level_expire)
        with_dv = dv_files or ()
        files = [
            f
            for f in runs[0].run.files
            if force_rewrite_all_files or expired(f) or f.file_name in with_dv
        ]
        return CompactUnit.from_files(max_level, files, file_rewrite=True) if files else None
    return CompactUnit.from_level_runs(max_level, list(runs))


def _worth_compacting(unit: CompactUnit) -> bool:
    """A unit with no files, or one file already at the output level, would change nothing."""
    if not unit.files:
        return False
    return len(unit.files) > 1 or unit.files[0].level != unit.output_level


def trigger_compaction(
    runs: Sequence[LevelSortedRun],
    num_levels: int,
    strategy: CompactStrategy | None,
    full: bool,
    options: CompactionOptions,
    record_level_expire: bool | ExpiryCheck = False,
    dv_files: Collection[str] | None = None,
) -> CompactUnit | None:
    """The unit a compaction manager would submit now; None means nothing to do.

    strategy None stands for a write-only table: it never compacts on its own, and a forced
    full compaction is refused as Java's NoopCompactManager does.
    """
    if full:
        if strategy is None:
            raise InvalidOptionError(
                f"table option '{WRITE_ONLY}' is true: full compaction is not supported; "
                f"set it to false to compact this table"
            )
        return pick_full_compaction(
            num_levels, runs, options.force_rewrite_all_files, record_level_expire, dv_files
        )
    if strategy is None:
        return None
    unit = strategy.pick(num_levels, runs)
    return unit if unit is not None and _worth_compacting(unit) else None


def drop_delete(
    output_level: int, non_empty_highest_level: int, deletion_vectors_enabled: bool
) -> bool:
    """Deletes may go once no older data can sit below the output (or DVs mask it anyway)."""
    return output_level != 0 and (
        output_level >= non_empty_highest_level or deletion_vectors_enabled
    )
