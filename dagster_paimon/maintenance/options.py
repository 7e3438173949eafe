"""Retention options with Paimon's keys and defaults, and the CLI's overrides on top."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from dagster_paimon.errors import InvalidArgumentError
from dagster_paimon.options import (
    CHANGELOG_RETAIN_MAX,
    CHANGELOG_RETAIN_MIN,
    CHANGELOG_TIME_RETAINED,
    CONSUMER_CHANGELOG_ONLY,
    CONSUMER_EXPIRATION_TIME,
    SNAPSHOT_EXPIRE_LIMIT,
    SNAPSHOT_RETAIN_MAX,
    SNAPSHOT_RETAIN_MIN,
    SNAPSHOT_TIME_RETAINED,
    at_least,
    changelog_producer,
    duration_ms,
    flag,
    read_option,
)

INT_MAX = 2**31 - 1
HOUR_MS = 3_600_000
DAY_MS = 24 * HOUR_MS


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
            raise InvalidArgumentError(f"retain-min must be >= 1, got {self.retain_min}")
        if self.retain_max < self.retain_min:
            raise InvalidArgumentError(
                f"retain-max ({self.retain_max}) must not be less than "
                f"retain-min ({self.retain_min})"
            )
        if self.max_deletes < 1:
            raise InvalidArgumentError(f"max-deletes must be >= 1, got {self.max_deletes}")
        if self.time_retained_ms < 0:
            raise InvalidArgumentError("a retention time cannot be negative")

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


@dataclass(frozen=True)
class ExpireConfig:
    """Snapshot and changelog retention; changelog kept longer means 'decoupled'."""

    snapshot: Retention
    changelog: Retention
    consumer_changelog_only: bool = False
    produce_changelog: bool = False
    consumer_expiration_ms: int | None = None

    @property
    def changelog_decoupled(self) -> bool:
        """Expired snapshots live on as changelogs when changelog retention is longer."""
        return self.changelog.longer_than(self.snapshot)

    @property
    def consumers_hold_snapshots(self) -> bool:
        """Whether consumers bound snapshot expiry: consumer.changelog-only lifts that only
        when the changelog lifecycle is decoupled (Java's CoreOptions.consumerChangelogOnly)."""
        return not (self.consumer_changelog_only and self.changelog_decoupled)

    def consumer_cutoff_ms(self, now_ms: int) -> int | None:
        """Consumers last written before this are expired (consumer.expiration-time)."""
        if self.consumer_expiration_ms is None:
            return None
        return now_ms - self.consumer_expiration_ms

    @classmethod
    def from_table_options(
        cls,
        options: Mapping[str, str],
        snapshot_overrides: RetentionOverrides | None = None,
        changelog_overrides: RetentionOverrides | None = None,
    ) -> ExpireConfig:
        """Table options, then overrides; unset changelog.* follow the snapshot values in use."""
        snapshot = Retention(
            retain_min=read_option(options, SNAPSHOT_RETAIN_MIN, at_least(1), 10),
            retain_max=read_option(options, SNAPSHOT_RETAIN_MAX, at_least(1), INT_MAX),
            time_retained_ms=read_option(options, SNAPSHOT_TIME_RETAINED, duration_ms, HOUR_MS),
            max_deletes=read_option(options, SNAPSHOT_EXPIRE_LIMIT, at_least(1), 50),
        )
        snapshot = (snapshot_overrides or RetentionOverrides()).apply(snapshot)
        changelog = Retention(
            retain_min=read_option(options, CHANGELOG_RETAIN_MIN, at_least(1), snapshot.retain_min),
            retain_max=read_option(options, CHANGELOG_RETAIN_MAX, at_least(1), snapshot.retain_max),
            time_retained_ms=read_option(
                options, CHANGELOG_TIME_RETAINED, duration_ms, snapshot.time_retained_ms
            ),
            max_deletes=snapshot.max_deletes,
        )
        changelog = (changelog_overrides or RetentionOverrides()).apply(changelog)
        snapshot.validate()
        changelog.validate()
        return cls(
            snapshot=snapshot,
            changelog=changelog,
            consumer_changelog_only=flag(options, CONSUMER_CHANGELOG_ONLY),
            produce_changelog=changelog_producer(options) != "none",
            consumer_expiration_ms=consumer_expiration_ms(options),
        )


def consumer_expiration_ms(options: Mapping[str, str]) -> int | None:
    """consumer.expiration-time in ms; None when unset (Java: no default, consumers stay)."""
    return read_option(options, CONSUMER_EXPIRATION_TIME, duration_ms, None)
