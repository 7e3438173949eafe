"""Snapshot expiry on real tables: retention options, tags, consumers, branches, failures."""

from __future__ import annotations

import os
from dataclasses import replace

import pytest

from dagster_paimon.errors import (
    InvalidArgumentError,
    MaintenanceAbortedError,
    StaleMaintenancePlanError,
)
from dagster_paimon.maintenance.expire import execute_expiry, plan_expiry
from dagster_paimon.maintenance.options import HOUR_MS, RetentionOverrides
from dagster_paimon.storage.local import LocalFiles
from dagster_paimon.table import open_catalog
from tests.hooks import context, expire_snapshots
from tests.lsm.kvmodel import read_rows
from tests.lsm.tables import compact
from tests.maintenance.histories import EXPIRE_ALL_BUT_LAST, append, history, later_ms
from tests.maintenance.oracle import (
    all_refs,
    exists,
    hint,
    manifest_exists,
    rows_at,
    set_consumer,
    snapshot_ids,
    tag_rows,
)


def test_table_defaults_keep_young_snapshots(warehouse):
    table = history(warehouse, 12)
    result = expire_snapshots(table)
    assert result.expired_ids == ()
    assert snapshot_ids(table) == list(range(1, 13))


def test_defaults_once_old_keep_the_ten_newest(warehouse):
    table = history(warehouse, 12)
    result = expire_snapshots(table, now_ms=later_ms(2 * HOUR_MS / 1000))
    assert result.expired_ids == (1, 2)
    assert snapshot_ids(table) == list(range(3, 13))
    assert hint(table, "snapshot") == "3"


def test_table_options_drive_retention(warehouse):
    options = {"snapshot.num-retained.min": "3", "snapshot.time-retained": "1 min"}
    table = history(warehouse, 8, **options)
    assert expire_snapshots(table, now_ms=later_ms(120)).expired_ids == (1, 2, 3, 4, 5)


def test_expire_limit_bounds_one_run(warehouse):
    table = history(warehouse, 8)
    overrides = replace(EXPIRE_ALL_BUT_LAST, max_deletes=3)
    assert expire_snapshots(table, overrides=overrides, now_ms=later_ms()).expired_ids == (1, 2, 3)
    assert expire_snapshots(table, overrides=overrides, now_ms=later_ms()).expired_ids == (4, 5, 6)


def test_retain_max_expires_even_young_snapshots(warehouse):
    table = history(warehouse, 8)
    overrides = RetentionOverrides(retain_min=2, retain_max=3)
    assert expire_snapshots(table, overrides=overrides).expired_ids == (1, 2, 3, 4, 5)


def test_retain_max_below_retain_min_is_rejected(warehouse):
    table = history(warehouse, 2)
    with pytest.raises(InvalidArgumentError, match="retain-max"):
        expire_snapshots(table, overrides=RetentionOverrides(retain_min=5, retain_max=2))


def test_tagged_snapshot_files_survive(warehouse):
    table = history(warehouse, 6, compact_after=(3, 5))
    table.create_tag("release", 2)
    expected = tag_rows(table, "release")
    tag_files = all_refs(table)[2].data
    result = expire_snapshots(table, overrides=EXPIRE_ALL_BUT_LAST, now_ms=later_ms())
    assert result.expired_ids == tuple(range(1, 8))
    assert all(exists(p) for p in tag_files)
    assert tag_rows(table, "release") == expected
    assert result.metrics()["deleted_data_files"] > 0


def test_consumers_hold_back_expiry(warehouse):
    table = history(warehouse, 8)
    set_consumer(table, "stream-a", 5)
    set_consumer(table, "stream-b", 3)
    result = expire_snapshots(table, overrides=EXPIRE_ALL_BUT_LAST, now_ms=later_ms())
    assert result.expired_ids == (1, 2)


def test_changelog_only_consumers_do_not_hold_back_snapshots(warehouse):
    # Java lets a changelog-only consumer pass only with a decoupled changelog lifecycle
    options = {"consumer.changelog-only": "true", "changelog.num-retained.min": "20"}
    table = history(warehouse, 8, **options)
    set_consumer(table, "stream", 3)
    result = expire_snapshots(table, overrides=EXPIRE_ALL_BUT_LAST, now_ms=later_ms())
    assert result.expired_ids == tuple(range(1, 8))


def test_unreadable_consumer_aborts(warehouse):
    table = history(warehouse, 3)
    set_consumer(table, "stream", 2)
    path = os.path.join(table.table_path, "consumer", "consumer-stream")
    with open(path, "w") as f:
        f.write("{not json")
    with pytest.raises(MaintenanceAbortedError, match="consumer"):
        expire_snapshots(table, overrides=EXPIRE_ALL_BUT_LAST, now_ms=later_ms())
    assert snapshot_ids(table) == [1, 2, 3]


def test_dry_run_reports_the_plan_and_deletes_nothing(warehouse):
    table = history(warehouse, 6, compact_after=(4,))
    before = sorted(os.walk(table.table_path))
    dry = expire_snapshots(table, overrides=EXPIRE_ALL_BUT_LAST, dry_run=True, now_ms=later_ms())
    assert sorted(os.walk(table.table_path)) == before
    real = expire_snapshots(table, overrides=EXPIRE_ALL_BUT_LAST, now_ms=later_ms())
    assert dry.dry_run and not real.dry_run
    assert dry.expired_ids == real.expired_ids == tuple(range(1, 7))
    assert dry.deleted_files == real.deleted_files
    assert dry.metrics()["expired"] == 6


def test_other_branches_keep_the_files_they_share(warehouse):
    table = history(warehouse, 4)
    table.create_tag("fork", 3)
    table.branch_manager().create_branch("dev", "fork")
    table.delete_tag("fork")
    branch = open_catalog(warehouse).get_table("db.cdc$branch_dev")
    expected = read_rows(branch)
    compact(table, warehouse, full=True)
    append(table, 99)
    expire_snapshots(table, overrides=EXPIRE_ALL_BUT_LAST, now_ms=later_ms())
    assert snapshot_ids(table) == [6]
    assert read_rows(branch) == expected


def test_a_tag_created_after_planning_stops_execution(warehouse):
    table = history(warehouse, 5, compact_after=(4,))
    plan = plan_expiry(table, overrides=EXPIRE_ALL_BUT_LAST, context=context(now_ms=later_ms()))
    table.create_tag("late", 2)
    with pytest.raises(StaleMaintenancePlanError, match="late"):
        execute_expiry(table, plan)
    assert snapshot_ids(table) == list(range(1, 7))
    assert tag_rows(table, "late") == rows_at(table, 2)


def test_a_consumer_registered_after_planning_stops_execution(warehouse):
    table = history(warehouse, 5)
    plan = plan_expiry(table, overrides=EXPIRE_ALL_BUT_LAST, context=context(now_ms=later_ms()))
    set_consumer(table, "late", 2)
    with pytest.raises(StaleMaintenancePlanError, match="consumer"):
        execute_expiry(table, plan)


def test_commits_landing_after_planning_keep_their_files(warehouse):
    table = history(warehouse, 5)
    plan = plan_expiry(table, overrides=EXPIRE_ALL_BUT_LAST, context=context(now_ms=later_ms()))
    append(table, 50)
    compact(table, warehouse, full=True)
    latest = snapshot_ids(table)[-1]
    expected = rows_at(table, latest)
    execute_expiry(table, plan)
    assert rows_at(table, latest) == expected


def test_files_the_latest_snapshot_uses_are_never_deleted(warehouse):
    table = history(warehouse, 3)
    live = sorted(all_refs(table)[3].data)
    plan = plan_expiry(table, overrides=EXPIRE_ALL_BUT_LAST, context=context(now_ms=later_ms()))
    tampered = replace(plan, data_files=(*plan.data_files, *live))
    execute_expiry(table, tampered)
    assert all(exists(p) for p in live)


class FailingFiles(LocalFiles):
    """A disk that fails after a number of deletions, as a crash midway would."""

    def __init__(self, fail_after: int):
        self.left = fail_after

    def delete_files(self, paths):
        deleted = 0
        for p in paths:
            if self.left == 0:
                raise OSError("disk went away")
            self.left -= 1
            deleted += super().delete_files([p])
        return deleted


@pytest.mark.parametrize("phase", ["first data file", "data files", "manifests", "snapshots"])
def test_a_crash_midway_leaves_retained_snapshots_readable_and_a_rerun_finishes(warehouse, phase):
    table = history(warehouse, 6, compact_after=(2, 5))
    table.create_tag("t4", 4)
    ids = snapshot_ids(table)
    rows = {i: rows_at(table, i) for i in ids}
    ever = all_refs(table)
    overrides = replace(EXPIRE_ALL_BUT_LAST, retain_min=3)
    plan = expire_snapshots(table, overrides=overrides, dry_run=True, now_ms=later_ms())
    data, metadata = plan.deleted_data_files, plan.deleted_metadata_files
    assert data > 2 and metadata > 2 and len(plan.expired_ids) > 2
    fail_after = {
        "first data file": 0,
        "data files": data // 2,
        "manifests": data + metadata // 2,
        "snapshots": data + metadata + 1,
    }[phase]
    with pytest.raises(OSError, match="went away"):
        expire_snapshots(
            table, overrides=overrides, now_ms=later_ms(), files=FailingFiles(fail_after)
        )
    for i in ids[-3:]:
        assert rows_at(table, i) == rows[i]
    expire_snapshots(table, overrides=overrides, now_ms=later_ms())
    assert snapshot_ids(table) == ids[-3:]
    for i in ids[-3:]:
        assert rows_at(table, i) == rows[i]
    assert tag_rows(table, "t4") == rows[4]
    kept = [ever[i] for i in ids[-3:]] + [ever[4]]
    kept_data = set().union(*(k.data for k in kept))
    kept_metadata = set().union(*(k.metadata for k in kept))
    for refs in ever.values():
        assert not any(exists(p) for p in refs.data - kept_data)
        assert not any(manifest_exists(table, n) for n in refs.metadata - kept_metadata)


def test_time_retention_protects_a_snapshot_until_its_successor_is_old_enough(warehouse):
    """Paimon 2.0's rule (apache/paimon#7706): snapshot N was the table's state until N+1
    landed, so it may expire only once N+1 is older than snapshot.time-retained."""
    table = history(warehouse, 5)
    manager = table.snapshot_manager()
    times = {i: manager.get_snapshot_by_id(i).time_millis for i in snapshot_ids(table)}
    assert times[4] - times[3] >= 2, "commits must land at distinct milliseconds"
    retained = 10_000
    cutoff = (times[3] + times[4]) // 2  # 1-3 are older than the retention, 4-5 younger
    overrides = RetentionOverrides(retain_min=1, retain_max=100, time_retained_ms=retained)
    result = expire_snapshots(table, overrides=overrides, now_ms=cutoff + retained)
    # by its own age snapshot 3 would go too; its successor 4 is still young
    assert result.expired_ids == (1, 2)
    assert snapshot_ids(table) == [3, 4, 5]


class TaggingOnceStore(LocalFiles):
    """The local disk, where a tag lands on snapshot 2 just after the plan listed the tags, as
    a concurrent `create_tag` would: the first guard check then finds it."""

    def __init__(self, table):
        self.table = table
        self.tag_listings = 0

    def list_dir(self, directory: str):
        listed = super().list_dir(directory)
        if directory.rstrip("/").endswith("/tag"):
            self.tag_listings += 1
            if self.tag_listings == 1:
                self.table.create_tag("late", 2)
        return listed


def test_a_plan_made_stale_is_made_again_and_keeps_the_new_tag(warehouse):
    table = history(warehouse, 5, compact_after=(4,))
    tagged = rows_at(table, 2)
    store = TaggingOnceStore(table)
    result = expire_snapshots(table, overrides=EXPIRE_ALL_BUT_LAST, now_ms=later_ms(), files=store)
    assert store.tag_listings >= 3  # planned, found stale, planned again, checked again
    assert result.expired_ids and 2 in result.expired_ids
    assert tag_rows(table, "late") == tagged
