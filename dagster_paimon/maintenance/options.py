"""Retention options with Paimon's keys and defaults, and the CLI's overrides on top."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from pypaimon.common.memory_size import MemorySize
from pypaimon.common.time_utils import parse_duration

from dagster_paimon.lsm.model.options import (
    CHANGELOG_PRODUCER,
    CHANGELOG_PRODUCERS,
    _at_least,
    _bool,
    _choice,
    _parse,
)

SNAPSHOT_RETAIN_MIN = "snapshot.num-retained.min"
SNAPSHOT_RETAIN_MAX = "snapshot.num-retained.max"
SNAPSHOT_TIME_RETAINED = "snapshot.time-retained"
SNAPSHOT_EXPIRE_LIMIT = "snapshot.expire.limit"
CHANGELOG_RETAIN_MIN = "changelog.num-retained.min"
CHANGELOG_RETAIN_MAX = "changelog.num-retained.max"
CHANGELOG_TIME_RETAINED = "changelog.time-retained"
CONSUMER_CHANGELOG_ONLY = "consumer.changelog-only"
MANIFEST_TARGET_SIZE = "manifest.target-file-size"
MANIFEST_MERGE_MIN_COUNT = "manifest.merge-min-count"
MANIFEST_FULL_COMPACTION_SIZE = "manifest.full-compaction-threshold-size"

INT_MAX = 2**31 - 1
HOUR_MS = 3_600_000
DAY_MS = 24 * HOUR_MS
MIB = 1024 * 1024


@dataclass(frozen=True)
class Retention:
    """How many snapshots (or changelogs) to keep and for how long, as Java's ExpireConfig."""

    retain_min: int = 10
    retain_max: int = INT_MAX
    time_retained_ms: int = HOUR_MS
    max_deletes: int = 50

    def validate(self) -> None:
        """Reject combinations Paimon rejects, before anything is read."""
        if self.retain_min < 1:
            raise ValueError(f"retain-min must be >= 1, got {self.retain_min}")
        if self.retain_max < self.retain_min:
            raise ValueError(
                f"retain-max ({self.retain_max}) must not be less than "
                f"retain-min ({self.retain_min})"
            )
        if self.max_deletes < 1:
            raise ValueError(f"max-deletes must be >= 1, got {self.max_deletes}")
        if self.time_retained_ms < 0:
            raise ValueError("a retention time cannot be negative")

    def longer_than(self, other: Retention) -> bool:
        """Whether this keeps more than `other` (Java's changelogLifecycleDecoupled test)."""
        return (
            self.retain_max > other.retain_max
            or self.retain_min > other.retain_min
            or self.time_retained_ms > other.time_retained_ms
        )


@dataclass(frozen=True)
class RetentionOverrides:
    """CLI flags that replace table options for one run; None keeps the table's value."""

    retain_min: int | None = None
    retain_max: int | None = None
    time_retained_ms: int | None = None
    max_deletes: int | None = None

    def apply(self, retention: Retention) -> Retention:
        """The retention with every given flag substituted."""
        given = {k: v for k, v in vars(self).items() if v is not None}
        return replace(retention, **given)


def parse_duration_ms(text: str) -> int:
    """A Paimon duration ('1 h', '30min', '2d'; a bare number is milliseconds) in ms."""
    return int(parse_duration(text))


@dataclass(frozen=True)
class ExpireConfig:
    """Snapshot and changelog retention; changelog kept longer means 'decoupled'."""

    snapshot: Retention
    changelog: Retention
    consumer_changelog_only: bool = False
    produce_changelog: bool = False

    @property
    def changelog_decoupled(self) -> bool:
        """Expired snapshots live on as changelogs when changelog retention is longer."""
        return self.changelog.longer_than(self.snapshot)

    @classmethod
    def from_table_options(
        cls,
        options: Mapping[str, str],
        snapshot_overrides: RetentionOverrides | None = None,
        changelog_overrides: RetentionOverrides | None = None,
    ) -> ExpireConfig:
        """Table options, then overrides; unset changelog.* follow the snapshot values in use."""
        snapshot = Retention(
            retain_min=_parse(options, SNAPSHOT_RETAIN_MIN, _at_least(1), 10),
            retain_max=_parse(options, SNAPSHOT_RETAIN_MAX, _at_least(1), INT_MAX),
            time_retained_ms=_parse(options, SNAPSHOT_TIME_RETAINED, parse_duration_ms, HOUR_MS),
            max_deletes=_parse(options, SNAPSHOT_EXPIRE_LIMIT, _at_least(1), 50),
        )
        snapshot = (snapshot_overrides or RetentionOverrides()).apply(snapshot)
        changelog = Retention(
            retain_min=_parse(options, CHANGELOG_RETAIN_MIN, _at_least(1), snapshot.retain_min),
            retain_max=_parse(options, CHANGELOG_RETAIN_MAX, _at_least(1), snapshot.retain_max),
            time_retained_ms=_parse(
                options, CHANGELOG_TIME_RETAINED, parse_duration_ms, snapshot.time_retained_ms
            ),
            max_deletes=snapshot.max_deletes,
        )
        changelog = (changelog_overrides or RetentionOverrides()).apply(changelog)
        snapshot.validate()
        changelog.validate()
        producer = _parse(options, CHANGELOG_PRODUCER, _choice(CHANGELOG_PRODUCERS), "none")
        return cls(
            snapshot=snapshot,
            changelog=changelog,
            consumer_changelog_only=_parse(options, CONSUMER_CHANGELOG_ONLY, _bool, False),
            produce_changelog=producer != "none",
        )


@dataclass(frozen=True)
class ManifestMergeOptions:
    """The three knobs of ManifestFileMerger, defaults as in CoreOptions.java."""

    target_size: int = 8 * MIB
    min_count: int = 30
    full_compaction_size: int = 16 * MIB

    @classmethod
    def from_table_options(cls, options: Mapping[str, str]) -> ManifestMergeOptions:
        """Parse the manifest.* options; bad values raise InvalidOptionError."""
        return cls(
            target_size=_parse(options, MANIFEST_TARGET_SIZE, MemorySize.parse_bytes, 8 * MIB),
            min_count=_parse(options, MANIFEST_MERGE_MIN_COUNT, _at_least(1), 30),
            full_compaction_size=_parse(
                options, MANIFEST_FULL_COMPACTION_SIZE, MemorySize.parse_bytes, 16 * MIB
            ),
        )

    def forced_full(self) -> ManifestMergeOptions:
        """Java's compact_manifest procedure: full compaction at any size, batches of one merge."""
        return replace(self, min_count=1, full_compaction_size=1)
