"""The compaction options of a table, read with Paimon's keys and CoreOptions.java's defaults."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from dagster_paimon.options import (
    CHANGELOG_ROW_DEDUPLICATE,
    CHANGELOG_ROW_DEDUPLICATE_IGNORE_FIELDS,
    COMPACTION_TRIGGER,
    DELETION_VECTORS,
    DELETION_VECTORS_MERGE_ON_READ,
    FORCE_LOOKUP,
    FORCE_REWRITE_ALL_FILES,
    FORCE_UP_LEVEL_0,
    INCREMENTAL_SIZE_THRESHOLD,
    LOOKUP_COMPACT,
    LOOKUP_COMPACT_MAX_INTERVAL,
    MAX_SIZE_AMP,
    NUM_LEVELS,
    OFFPEAK_END,
    OFFPEAK_RATIO,
    OFFPEAK_START,
    OPTIMIZATION_INTERVAL,
    RECORD_LEVEL_EXPIRE_TIME,
    SEQUENCE_FIELD,
    SIZE_RATIO,
    SMALL_FILE_RATIO,
    STOP_TRIGGER,
    TARGET_FILE_SIZE,
    TOTAL_SIZE_THRESHOLD,
    WRITE_ONLY,
    WRITE_ONLY_FALLBACKS,
    at_least,
    changelog_producer,
    choice,
    duration_ms,
    flag,
    hour,
    memory_bytes,
    merge_engine,
    names,
    ratio,
    read_option,
)

PK_TARGET_FILE_SIZE = 128 * 1024 * 1024
LOOKUP_COMPACT_MODES = ("radical", "gentle")


@dataclass(frozen=True)
class CompactionOptions:
    """Everything the LSM engine reads from table options, defaults as in CoreOptions.java."""

    target_file_size: int = PK_TARGET_FILE_SIZE
    small_file_ratio: float = 0.7
    num_sorted_run_compaction_trigger: int = 5
    num_sorted_run_stop_trigger: int = 8
    num_levels: int = 6
    max_size_amplification_percent: int = 200
    size_ratio: int = 1
    offpeak_start_hour: int = -1
    offpeak_end_hour: int = -1
    offpeak_ratio: int = 0
    optimization_interval_ms: int | None = None
    total_size_threshold: int | None = None
    incremental_size_threshold: int | None = None
    force_up_level_0: bool = False
    force_rewrite_all_files: bool = False
    write_only: bool = False
    changelog_producer: str = "none"
    deletion_vectors_enabled: bool = False
    merge_engine: str = "deduplicate"
    force_lookup: bool = False
    lookup_compact: str = "radical"
    lookup_compact_max_interval: int | None = None
    record_level_expire_time_ms: int | None = None
    row_deduplicate: bool = False
    row_deduplicate_ignore_fields: tuple[str, ...] = ()
    has_sequence_field: bool = False
    deletion_vectors_merge_on_read: bool = False

    @property
    def min_file_size(self) -> int:
        """Files below this size are merged rather than upgraded (MergeTreeCompactTask)."""
        return int(self.target_file_size * self.small_file_ratio)

    @property
    def skips_level0_on_read(self) -> bool:
        """Batch readers skip level 0 (CoreOptions.batchScanSkipLevel0): keys above are unique."""
        if self.deletion_vectors_enabled:
            return not self.deletion_vectors_merge_on_read
        return self.merge_engine == "first-row"

    @property
    def produces_lookup_changelog(self) -> bool:
        """Compactions involving level 0 write a changelog (LookupStrategy.produceChangelog)."""
        return self.changelog_producer == "lookup"

    @property
    def needs_lookup(self) -> bool:
        """Lookup-based tables keep level 0 empty, as Java's CoreOptions.needLookup."""
        return (
            self.changelog_producer == "lookup"
            or self.deletion_vectors_enabled
            or self.merge_engine == "first-row"
            or self.force_lookup
        )

    @classmethod
    def from_table_options(cls, options: Mapping[str, str]) -> CompactionOptions:
        """Parse table options; unknown keys are ignored, bad values raise InvalidOptionError."""
        trigger = read_option(options, COMPACTION_TRIGGER, at_least(1), 5)
        stop = read_option(options, STOP_TRIGGER, at_least(1), trigger + 3)
        return cls(
            target_file_size=read_option(
                options, TARGET_FILE_SIZE, memory_bytes, PK_TARGET_FILE_SIZE
            ),
            small_file_ratio=read_option(options, SMALL_FILE_RATIO, ratio, 0.7),
            num_sorted_run_compaction_trigger=trigger,
            num_sorted_run_stop_trigger=max(trigger, stop),
            num_levels=read_option(options, NUM_LEVELS, at_least(2), trigger + 1),
            max_size_amplification_percent=read_option(options, MAX_SIZE_AMP, at_least(0), 200),
            size_ratio=read_option(options, SIZE_RATIO, at_least(0), 1),
            offpeak_start_hour=read_option(options, OFFPEAK_START, hour, -1),
            offpeak_end_hour=read_option(options, OFFPEAK_END, hour, -1),
            offpeak_ratio=read_option(options, OFFPEAK_RATIO, at_least(0), 0),
            optimization_interval_ms=read_option(options, OPTIMIZATION_INTERVAL, duration_ms, None),
            total_size_threshold=read_option(options, TOTAL_SIZE_THRESHOLD, memory_bytes, None),
            incremental_size_threshold=read_option(
                options, INCREMENTAL_SIZE_THRESHOLD, memory_bytes, None
            ),
            force_up_level_0=flag(options, FORCE_UP_LEVEL_0),
            force_rewrite_all_files=flag(options, FORCE_REWRITE_ALL_FILES),
            write_only=flag(options, WRITE_ONLY, WRITE_ONLY_FALLBACKS),
            changelog_producer=changelog_producer(options),
            deletion_vectors_enabled=flag(options, DELETION_VECTORS),
            merge_engine=merge_engine(options),
            force_lookup=flag(options, FORCE_LOOKUP),
            lookup_compact=read_option(
                options, LOOKUP_COMPACT, choice(LOOKUP_COMPACT_MODES), "radical"
            ),
            lookup_compact_max_interval=read_option(
                options, LOOKUP_COMPACT_MAX_INTERVAL, at_least(1), None
            ),
            record_level_expire_time_ms=read_option(
                options, RECORD_LEVEL_EXPIRE_TIME, duration_ms, None
            ),
            row_deduplicate=flag(options, CHANGELOG_ROW_DEDUPLICATE),
            row_deduplicate_ignore_fields=tuple(
                read_option(options, CHANGELOG_ROW_DEDUPLICATE_IGNORE_FIELDS, names, [])
            ),
            has_sequence_field=bool(read_option(options, SEQUENCE_FIELD, names, [])),
            deletion_vectors_merge_on_read=flag(options, DELETION_VECTORS_MERGE_ON_READ),
        )
