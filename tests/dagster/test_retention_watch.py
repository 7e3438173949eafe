"""The sensor's retention metrics: tags, partitions, the oldest snapshot's age, read cheaply."""

from __future__ import annotations

import time

from dagster_paimon.dagster import sensors
from dagster_paimon.dagster.sensors import RetentionWatch
from dagster_paimon.lsm.model.levels import read_levels
from dagster_paimon.maintenance.tags import create_tag
from tests.hooks import expire_snapshots
from tests.maintenance.histories import EXPIRE_ALL_BUT_LAST, history, later_ms


def test_the_earliest_snapshot_is_read_only_when_its_hint_moves(warehouse, monkeypatch):
    table = history(warehouse, 4)
    create_tag(table, "keep", snapshot_id=2)
    reads: list[int] = []
    real = sensors.read_snapshot

    def counted(t, snapshot_id):
        reads.append(snapshot_id)
        return real(t, snapshot_id)

    monkeypatch.setattr(sensors, "read_snapshot", counted)
    watch = RetentionWatch()
    levels = read_levels(table)
    first = watch.metrics(table, levels)
    assert first["tags"] == 1
    expected = table.snapshot_manager().get_snapshot_by_id(1).time_millis
    age = first["oldest_snapshot_age_seconds"]
    assert abs(age - (time.time() * 1000 - expected) / 1000) < 5
    assert reads == [1]  # no EARLIEST hint yet: one listing, then snapshot 1
    assert watch.metrics(table, levels)["tags"] == 1
    assert reads == [1, 1]  # a table without the hint lists and reads again
    expire_snapshots(table, overrides=EXPIRE_ALL_BUT_LAST, now_ms=later_ms())
    reads.clear()
    moved = watch.metrics(table, levels)
    assert reads == [4]  # the hint names the new earliest: read once
    reads.clear()
    assert watch.metrics(table, levels)["oldest_snapshot_age_seconds"] >= 0
    assert reads == []  # unchanged hint: no snapshot read
    labels = {b.partition.label() for b in levels.buckets if b.partition.spec}
    assert moved["partitions"] == len(labels)
