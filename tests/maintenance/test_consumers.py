"""Consumers on real tables: list, expiry by file age, reset, clear by pattern, and how
consumers (expired or changelog-only) bound snapshot expiry."""

from __future__ import annotations

import json
import os
import time
from datetime import timedelta
from pathlib import Path

import pytest

from dagster_paimon.errors import (
    ConsumerNotFoundError,
    InvalidArgumentError,
    SnapshotNotFoundError,
)
from dagster_paimon.maintenance.consumers import (
    clear_consumers,
    expire_consumers,
    list_consumers,
    reset_consumer,
)
from tests.hooks import expire_snapshots
from tests.maintenance.histories import EXPIRE_ALL_BUT_LAST, history, later_ms
from tests.maintenance.oracle import set_consumer, snapshot_ids

DAY_S = 86_400


def consumer_path(table, consumer_id: str) -> str:
    """Where Paimon keeps a consumer's position."""
    return os.path.join(table.table_path, "consumer", f"consumer-{consumer_id}")


def age(table, consumer_id: str, days: float) -> None:
    """Make a consumer file look last written `days` ago."""
    old = time.time() - days * DAY_S
    os.utime(consumer_path(table, consumer_id), (old, old))


def ids(table) -> list[str]:
    """Consumer ids by listing."""
    return [c.consumer_id for c in list_consumers(table).consumers]


@pytest.fixture
def table(warehouse):
    """Four snapshots, three consumers of different ages."""
    t = history(warehouse, 4)
    set_consumer(t, "flink-a", 2)
    set_consumer(t, "flink-b", 3)
    set_consumer(t, "spark-a", 4)
    age(t, "flink-a", 10)
    age(t, "flink-b", 1)
    return t


def test_list(table):
    result = list_consumers(table)
    assert [(c.consumer_id, c.next_snapshot) for c in result.consumers] == [
        ("flink-a", 2),
        ("flink-b", 3),
        ("spark-a", 4),
    ]
    assert result.min_next_snapshot == 2
    assert result.metrics() == {"consumers": 3, "min_next_snapshot": 2}
    assert "flink-a: next snapshot 2" in result.summary()


def test_expire_by_age(table):
    dry = expire_consumers(table, expiration_time=timedelta(days=2), dry_run=True)
    assert dry.removed == ("flink-a",) and dry.dry_run
    assert ids(table) == ["flink-a", "flink-b", "spark-a"]
    done = expire_consumers(table, expiration_time=timedelta(hours=12))
    assert done.removed == ("flink-a", "flink-b") and done.kept == ("spark-a",)
    assert ids(table) == ["spark-a"]
    assert done.to_dict()["removed"] == ["flink-a", "flink-b"]
    assert done.metrics()["removed"] == 2


def test_expire_reads_the_table_option(warehouse):
    t = history(warehouse, 3, **{"consumer.expiration-time": "2 d"})
    set_consumer(t, "old", 1)
    set_consumer(t, "new", 2)
    age(t, "old", 3)
    assert expire_consumers(t).removed == ("old",)
    assert ids(t) == ["new"]


def test_expire_without_option_removes_nothing(table):
    result = expire_consumers(table)
    assert result.removed == () and result.expiration_ms is None
    assert "not set" in result.summary()
    assert len(ids(table)) == 3


def test_expire_rejects_bad_durations(table):
    with pytest.raises(InvalidArgumentError):
        expire_consumers(table, expiration_time=timedelta(seconds=-1))
    with pytest.raises(InvalidArgumentError):
        expire_consumers(table, expiration_time=5)  # type: ignore[arg-type]
    assert len(ids(table)) == 3


def test_clear_with_patterns(table):
    dry = clear_consumers(table, including="flink-.*", excluding="flink-b", dry_run=True)
    assert dry.removed == ("flink-a",)
    assert len(ids(table)) == 3
    # a pattern must match the whole id, as Java's Matcher.matches()
    assert clear_consumers(table, including="flink").removed == ()
    assert clear_consumers(table, including="flink-.*", excluding="flink-b").removed == ("flink-a",)
    assert ids(table) == ["flink-b", "spark-a"]
    assert clear_consumers(table).removed == ("flink-b", "spark-a")
    assert ids(table) == []


def test_clear_rejects_a_bad_pattern(table):
    with pytest.raises(InvalidArgumentError, match="regular expression"):
        clear_consumers(table, including="(")
    assert len(ids(table)) == 3


def test_reset(table):
    result = reset_consumer(table, "flink-a", 4)
    assert (result.previous, result.next_snapshot) == (2, 4)
    with open(consumer_path(table, "flink-a")) as f:
        assert json.load(f) == {"nextSnapshot": 4}
    # pypaimon's own ConsumerManager reads what we wrote
    from pypaimon.consumer.consumer_manager import ConsumerManager

    assert ConsumerManager(table.file_io, table.table_path).consumer("flink-a").next_snapshot == 4
    assert list_consumers(table).min_next_snapshot == 3


def test_reset_bad_input_changes_nothing(table):
    before = Path(consumer_path(table, "flink-a")).read_text()
    with pytest.raises(ConsumerNotFoundError):
        reset_consumer(table, "nobody", 2)
    with pytest.raises(SnapshotNotFoundError):
        reset_consumer(table, "flink-a", 99)
    with pytest.raises(InvalidArgumentError):
        reset_consumer(table, "flink-a", 0)
    assert Path(consumer_path(table, "flink-a")).read_text() == before
    assert not os.path.exists(consumer_path(table, "nobody"))


def test_expired_consumer_no_longer_holds_snapshot_expiry(warehouse):
    t = history(warehouse, 8, **{"consumer.expiration-time": "1 d"})
    set_consumer(t, "gone", 2)
    set_consumer(t, "live", 5)
    age(t, "gone", 3)
    result = expire_snapshots(t, overrides=EXPIRE_ALL_BUT_LAST, now_ms=later_ms())
    assert result.expired_ids == (1, 2, 3, 4)
    assert snapshot_ids(t) == [5, 6, 7, 8]


def test_changelog_only_consumer_needs_a_decoupled_changelog(warehouse):
    # Java: consumer.changelog-only counts only when the changelog lifecycle is decoupled
    t = history(warehouse, 8, **{"consumer.changelog-only": "true"})
    set_consumer(t, "stream", 3)
    result = expire_snapshots(t, overrides=EXPIRE_ALL_BUT_LAST, now_ms=later_ms())
    assert result.expired_ids == (1, 2)


def test_changelog_only_consumer_lets_snapshot_expiry_pass(warehouse):
    options = {"consumer.changelog-only": "true", "changelog.num-retained.min": "20"}
    t = history(warehouse, 8, **options)
    set_consumer(t, "stream", 3)
    result = expire_snapshots(t, overrides=EXPIRE_ALL_BUT_LAST, now_ms=later_ms())
    assert result.expired_ids == tuple(range(1, 8))
    assert snapshot_ids(t) == [8]
