"""Maintenance of append tables (no primary key), bucketed and unaware-bucket, partitioned and
not: every operation is table-kind agnostic in Java, so each must remove exactly the files no
retained snapshot, tag or consumer uses, and leave rows pypaimon reads as the model says."""

from __future__ import annotations

import os
from datetime import datetime, timedelta

import pytest

from dagster_paimon import PaimonTable
from dagster_paimon.io.index import index_entries, index_path
from dagster_paimon.maintenance.maintain import maintain
from dagster_paimon.maintenance.options import RetentionOverrides
from dagster_paimon.maintenance.rollback import rollback_to
from dagster_paimon.partition import Partition
from dagster_paimon.snapshot.entries import live_entries
from tests.hooks import (
    compact_manifests,
    create_automatic_tags,
    create_tag,
    expire_changelogs,
    expire_partitions,
    expire_snapshots,
    expire_tags,
    remove_orphans,
)
from tests.maintenance.appends import (
    DAYS,
    append_commits,
    append_table,
    delete_positions,
    events,
    file_rows,
    latest,
    model,
    overwrite_history,
    rows,
)
from tests.maintenance.histories import EXPIRE_ALL_BUT_LAST, later_ms
from tests.maintenance.oracle import (
    age_tree,
    all_refs,
    changelog_ids,
    exists,
    set_consumer,
    snapshot_ids,
    tag_refs,
)

KINDS = [
    pytest.param(layout, partitioned, id=f"{layout}-{'partitioned' if partitioned else 'flat'}")
    for layout in ("bucketed", "unaware")
    for partitioned in (True, False)
]


@pytest.mark.parametrize(("layout", "partitioned"), KINDS)
def test_snapshot_expiry_deletes_exactly_the_files_nothing_retained_uses(
    warehouse, layout, partitioned
):
    table, models = overwrite_history(warehouse, layout, partitioned)
    table.create_tag("before-overwrite", 2)
    ever = all_refs(table)
    held = tag_refs(table)["before-overwrite"].data
    assert ever[3].data - ever[5].data  # the overwrite deleted files
    result = expire_snapshots(table, overrides=EXPIRE_ALL_BUT_LAST, now_ms=later_ms())
    assert result.expired_ids == (1, 2, 3, 4)
    assert snapshot_ids(table) == [5]
    gone = set().union(*(ever[i].data for i in range(1, 5))) - ever[5].data - held
    assert gone and gone == ever[3].data - ever[5].data - held
    assert not any(exists(p) for p in gone)
    assert all(exists(p) for p in ever[5].data | held)
    assert rows(table) == models[5]
    assert rows(table.copy({"scan.tag-name": "before-overwrite"})) == models[2]
    # the tag's deletion then frees its own files, and only those
    deleted = PaimonTable.open(warehouse, "db.events").delete_tag("before-overwrite")
    assert deleted.summary()
    assert held - ever[5].data and not any(exists(p) for p in held - ever[5].data)
    assert all(exists(p) for p in ever[5].data)
    assert rows(table) == models[5]


def test_a_consumer_holds_back_append_table_expiry(warehouse):
    table, models = overwrite_history(warehouse, "unaware", True)
    set_consumer(table, "reader", 3)
    result = expire_snapshots(table, overrides=EXPIRE_ALL_BUT_LAST, now_ms=later_ms())
    assert result.expired_ids == (1, 2)
    assert rows(table, 3) == models[3]


def test_decoupled_changelog_keeps_the_appended_files_until_changelog_expiry(warehouse):
    """No changelog producer: an append table's APPEND files are its changelog (Java's
    SnapshotDeletion skips them when the changelog outlives the snapshots)."""
    table, _ = overwrite_history(
        warehouse, "bucketed", True, **{"changelog.num-retained.min": "10"}
    )
    ever = all_refs(table)
    overwritten = ever[3].data - ever[5].data
    expire_snapshots(table, overrides=EXPIRE_ALL_BUT_LAST, now_ms=later_ms())
    assert changelog_ids(table) == [1, 2, 3, 4]
    assert all(exists(p) for p in overwritten)
    append_commits(table, 1, first=9)
    expire_snapshots(table, overrides=EXPIRE_ALL_BUT_LAST, now_ms=later_ms())
    keep_one = RetentionOverrides(retain_min=1, time_retained_ms=0, max_deletes=1000)
    assert expire_changelogs(table, overrides=keep_one, now_ms=later_ms()).expired_ids == (
        1,
        2,
        3,
        4,
    )
    assert changelog_ids(table) == [5]
    assert not any(exists(p) for p in overwritten)
    assert all(exists(p) for refs in all_refs(table).values() for p in refs.data)
    assert all(exists(p) for p in ever[5].data)


@pytest.mark.parametrize("layout", ["bucketed", "unaware"])
def test_partition_expiry_drops_old_days_of_an_append_table(warehouse, layout):
    table = append_table(
        warehouse,
        layout,
        **{"partition.expiration-time": "2 d", "partition.timestamp-formatter": "yyyy-MM-dd"},
    )
    append_commits(table, 2)
    before = all_refs(table)[2].data
    result = expire_partitions(table, now=datetime(2024, 1, 4, 12))
    assert result.expired_partitions == tuple(f"dt={d}" for d in DAYS[:2])
    assert rows(table) == [r for r in model(events(0), events(1)) if r[0] == DAYS[2]]
    expire_snapshots(table, overrides=EXPIRE_ALL_BUT_LAST, now_ms=later_ms())
    live = all_refs(table)[3].data
    assert live and all(f"dt={DAYS[2]}" in p for p in live)
    assert not any(exists(p) for p in before - live)


@pytest.mark.parametrize(("layout", "partitioned"), KINDS[:2])
def test_manifest_compaction_keeps_every_row(warehouse, layout, partitioned):
    table, models = overwrite_history(warehouse, layout, partitioned)
    result = compact_manifests(table, full=True)
    assert not result.dry_run and result.to_dict()
    assert snapshot_ids(table) == [1, 2, 3, 4, 5, 6]
    assert rows(table) == models[5]
    assert all_refs(table)[6].data == all_refs(table)[5].data


@pytest.mark.parametrize("layout", ["bucketed", "unaware"])
def test_rollback_of_an_append_table_removes_what_only_newer_snapshots_used(warehouse, layout):
    table, models = overwrite_history(warehouse, layout, True)
    ever = all_refs(table)
    rollback_to(table, snapshot_id=3)
    assert snapshot_ids(table) == [1, 2, 3]
    assert rows(table) == models[3]
    assert not any(exists(p) for p in (ever[4].data | ever[5].data) - ever[3].data)
    assert all(exists(p) for p in ever[3].data)


def test_orphans_doctor_tags_and_the_maintain_pass_on_an_append_table(warehouse):
    table, models = overwrite_history(
        warehouse,
        "unaware",
        True,
        **{
            "tag.automatic-creation": "batch",
            "snapshot.num-retained.min": "1",
            "snapshot.time-retained": "1 ms",
        },
    )
    stray = os.path.join(table.table_path, f"dt={DAYS[0]}", "bucket-0", "data-stray.parquet")
    with open(stray, "wb") as f:
        f.write(b"not committed")
    age_tree(table.table_path)
    orphans = remove_orphans(table)
    assert [p.rsplit("/", 1)[-1] for p in orphans.orphans] == ["data-stray.parquet"]
    assert not exists(stray)
    assert rows(table) == models[5]
    paimon = PaimonTable.open(warehouse, "db.events")
    assert paimon.doctor().to_dict()["healthy"]
    created = create_automatic_tags(table, now=datetime.now() + timedelta(days=1))
    assert created.to_dict()["created"]
    result = maintain(table)
    assert result.to_dict()
    assert snapshot_ids(table) == [5]
    assert rows(table) == models[5]
    assert paimon.doctor().to_dict()["healthy"]


def _index_paths(table, snapshot_id: int) -> set[str]:
    """Paths of the index files a snapshot's index manifest names."""
    snapshot = table.snapshot_manager().get_snapshot_by_id(snapshot_id)
    return {
        index_path(table, Partition.of_row(e.partition), e.bucket, e.index_file)
        for e in index_entries(table, snapshot)
    }


@pytest.mark.parametrize("layout", ["bucketed", "unaware"])
def test_expiry_deletes_replaced_deletion_vectors_unless_a_tag_holds_them(warehouse, layout):
    table = append_table(warehouse, layout, **{"deletion-vectors.enabled": "true"})
    append_commits(table, 2)
    entry = max(live_entries(table, latest(table)), key=lambda e: e.file.row_count)
    name, written = entry.file.file_name, file_rows(table, entry.file.file_name)
    everything = rows(table)
    for position in range(3):  # snapshots 3, 4, 5: each replaces the bucket's index file
        delete_positions(table, {name: list(range(position + 1))})
    table.create_tag("first-delete", 3)
    index = {i: _index_paths(table, i) for i in (3, 4, 5)}
    assert len(index[3] | index[4] | index[5]) == 3
    expire_snapshots(table, overrides=EXPIRE_ALL_BUT_LAST, now_ms=later_ms())
    assert [exists(p) for i in (3, 4, 5) for p in index[i]] == [True, False, True]
    assert rows(table) == sorted(set(everything) - set(written[:3]))
    assert rows(table.copy({"scan.tag-name": "first-delete"})) == sorted(
        set(everything) - set(written[:1])
    )
    PaimonTable.open(warehouse, "db.events").delete_tag("first-delete")
    assert [exists(p) for i in (3, 5) for p in index[i]] == [False, True]
    age_tree(table.table_path)
    assert remove_orphans(table).orphans == ()  # the live index file is no orphan
    assert all(exists(p) for p in index[5])
    health = PaimonTable.open(warehouse, "db.events").health()
    assert health.kind == "append" and health.totals.deleted_rows == 3


def test_partition_expiry_drops_the_deletion_vectors_of_the_dropped_days(warehouse):
    options = {"partition.expiration-time": "2 d", "partition.timestamp-formatter": "yyyy-MM-dd"}
    table = append_table(warehouse, "unaware", **{"deletion-vectors.enabled": "true"}, **options)
    append_commits(table, 2)
    first = {e.partition.values[0]: e.file.file_name for e in live_entries(table, latest(table))}
    delete_positions(table, {name: [0] for name in first.values()})
    deleted = {file_rows(table, name)[0] for name in first.values()}
    indexes = _index_paths(table, 3)
    expire_partitions(table, now=datetime(2024, 1, 4, 12))
    kept = _index_paths(table, 4)
    assert len(indexes) == 3 and len(kept) == 1 and kept <= indexes
    assert rows(table) == sorted(
        r for r in set(model(events(0), events(1))) - deleted if r[0] == DAYS[2]
    )
    expire_snapshots(table, overrides=EXPIRE_ALL_BUT_LAST, now_ms=later_ms())
    assert [exists(p) for p in sorted(indexes)] == [p in kept for p in sorted(indexes)]


def test_tag_time_expiry_frees_what_only_the_tag_held(warehouse):
    table, models = overwrite_history(warehouse, "bucketed", False)
    long_ago = datetime(2020, 1, 1, 12, 0)
    create_tag(table, "old", snapshot_id=2, time_retained=timedelta(days=1), now=long_ago)
    create_tag(table, "kept", snapshot_id=4)  # after the overwrite of everything
    expire_snapshots(table, overrides=EXPIRE_ALL_BUT_LAST, now_ms=later_ms())
    held = tag_refs(table)
    only_old = held["old"].data - held["kept"].data - all_refs(table)[5].data
    assert only_old
    assert expire_tags(table).deleted == ("old",)
    assert sorted(tag_refs(table)) == ["kept"]
    assert not any(exists(p) for p in only_old)
    assert all(exists(p) for p in held["kept"].data)
    assert rows(table.copy({"scan.tag-name": "kept"})) == models[4]
    assert rows(table) == models[5]
