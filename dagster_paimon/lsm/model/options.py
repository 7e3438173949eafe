"""Compaction options read from a table's Paimon options, with Paimon's keys and defaults."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from pypaimon.common.memory_size import MemorySize
from pypaimon.common.time_utils import parse_duration

from dagster_paimon.errors import InvalidOptionError

T = TypeVar("T")

TARGET_FILE_SIZE = "target-file-size"
SMALL_FILE_RATIO = "compaction.small-file-ratio"
COMPACTION_TRIGGER = "num-sorted-run.compaction-trigger"
STOP_TRIGGER = "num-sorted-run.stop-trigger"
NUM_LEVELS = "num-levels"
MAX_SIZE_AMP = "compaction.max-size-amplification-percent"
SIZE_RATIO = "compaction.size-ratio"
OFFPEAK_START = "compaction.offpeak.start.hour"
OFFPEAK_END = "compaction.offpeak.end.hour"
OFFPEAK_RATIO = "compaction.offpeak-ratio"
OPTIMIZATION_INTERVAL = "compaction.optimization-interval"
TOTAL_SIZE_THRESHOLD = "compaction.total-size-threshold"
INCREMENTAL_SIZE_THRESHOLD = "compaction.incremental-size-threshold"
FORCE_UP_LEVEL_0 = "compaction.force-up-level-0"
FORCE_REWRITE_ALL_FILES = "compaction.force-rewrite-all-files"
WRITE_ONLY = "write-only"
CHANGELOG_PRODUCER = "changelog-producer"
DELETION_VECTORS = "deletion-vectors.enabled"
MERGE_ENGINE = "merge-engine"
FORCE_LOOKUP = "force-lookup"
LOOKUP_COMPACT = "lookup-compact"
LOOKUP_COMPACT_MAX_INTERVAL = "lookup-compact.max-interval"
RECORD_LEVEL_EXPIRE_TIME = "record-level.expire-time"

PK_TARGET_FILE_SIZE = 128 * 1024 * 1024
CHANGELOG_PRODUCERS = ("none", "input", "full-compaction", "lookup")
MERGE_ENGINES = ("deduplicate", "partial-update", "aggregation", "first-row")
LOOKUP_COMPACT_MODES = ("radical", "gentle")


def _parse(options: Mapping[str, str], key: str, convert: Callable[[str], T], default: T) -> T:
    """Read one option; any conversion failure names the key and the bad value."""
    raw = options.get(key)
    if raw is None:
        return default
    try:
        return convert(str(raw).strip())
    except (ValueError, TypeError) as e:
        raise InvalidOptionError(f"table option '{key}' has malformed value {raw!r}: {e}") from e


def _bool(text: str) -> bool:
    """Paimon accepts exactly true/false, case-insensitively."""
    lowered = text.lower()
    if lowered not in ("true", "false"):
        raise ValueError("expected true or false")
    return lowered == "true"


def _choice(choices: tuple[str, ...]) -> Callable[[str], str]:
    """A converter that accepts only Paimon's enumerated values."""

    def convert(text: str) -> str:
        lowered = text.lower()
        if lowered not in choices:
            raise ValueError(f"expected one of {', '.join(choices)}")
        return lowered

    return convert


def _at_least(minimum: int) -> Callable[[str], int]:
    """An integer converter with a lower bound, for counts and levels."""

    def convert(text: str) -> int:
        value = int(text)
        if value < minimum:
            raise ValueError(f"must be >= {minimum}")
        return value

    return convert


def _hour(text: str) -> int:
    """An hour of day, or -1 for 'not set'."""
    value = int(text)
    if not -1 <= value <= 23:
        raise ValueError("must be -1 or an hour 0..23")
    return value


def _ratio(text: str) -> float:
    """A fraction in (0, 1]."""
    value = float(text)
    if not 0.0 < value <= 1.0:
        raise ValueError("must be in (0, 1]")
    return value


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

    @property
    def min_file_size(self) -> int:
        """Files below this size are merged rather than upgraded (MergeTreeCompactTask)."""
        return int(self.target_file_size * self.small_file_ratio)

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
        trigger = _parse(options, COMPACTION_TRIGGER, _at_least(1), 5)
        stop = _parse(options, STOP_TRIGGER, _at_least(1), trigger + 3)
        return cls(
            target_file_size=_parse(
                options, TARGET_FILE_SIZE, MemorySize.parse_bytes, PK_TARGET_FILE_SIZE
            ),
            small_file_ratio=_parse(options, SMALL_FILE_RATIO, _ratio, 0.7),
            num_sorted_run_compaction_trigger=trigger,
            num_sorted_run_stop_trigger=max(trigger, stop),
            num_levels=_parse(options, NUM_LEVELS, _at_least(2), trigger + 1),
            max_size_amplification_percent=_parse(options, MAX_SIZE_AMP, _at_least(0), 200),
            size_ratio=_parse(options, SIZE_RATIO, _at_least(0), 1),
            offpeak_start_hour=_parse(options, OFFPEAK_START, _hour, -1),
            offpeak_end_hour=_parse(options, OFFPEAK_END, _hour, -1),
            offpeak_ratio=_parse(options, OFFPEAK_RATIO, _at_least(0), 0),
            optimization_interval_ms=_parse(options, OPTIMIZATION_INTERVAL, parse_duration, None),
            total_size_threshold=_parse(
                options, TOTAL_SIZE_THRESHOLD, MemorySize.parse_bytes, None
            ),
            incremental_size_threshold=_parse(
                options, INCREMENTAL_SIZE_THRESHOLD, MemorySize.parse_bytes, None
            ),
            force_up_level_0=_parse(options, FORCE_UP_LEVEL_0, _bool, False),
            force_rewrite_all_files=_parse(options, FORCE_REWRITE_ALL_FILES, _bool, False),
            write_only=_parse(options, WRITE_ONLY, _bool, False),
            changelog_producer=_parse(
                options, CHANGELOG_PRODUCER, _choice(CHANGELOG_PRODUCERS), "none"
            ),
            deletion_vectors_enabled=_parse(options, DELETION_VECTORS, _bool, False),
            merge_engine=_parse(options, MERGE_ENGINE, _choice(MERGE_ENGINES), "deduplicate"),
            force_lookup=_parse(options, FORCE_LOOKUP, _bool, False),
            lookup_compact=_parse(
                options, LOOKUP_COMPACT, _choice(LOOKUP_COMPACT_MODES), "radical"
            ),
            lookup_compact_max_interval=_parse(
                options, LOOKUP_COMPACT_MAX_INTERVAL, _at_least(1), None
            ),
            record_level_expire_time_ms=_parse(
                options, RECORD_LEVEL_EXPIRE_TIME, parse_duration, None
            ),
        )
