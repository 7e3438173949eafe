"""Append tables (no primary key) maintained by us and by Paimon's Java (0.9 and 1.0) on copies
of one pypaimon-written table: snapshot expiry, partition expiry, tag deletion and rollback
leave the same files, and Java's reader reads both copies as the model says."""

from __future__ import annotations

import os
import shutil
from datetime import datetime

import pytest

from dagster_paimon.maintenance.options import RetentionOverrides
from dagster_paimon.maintenance.rollback import rollback_to
from dagster_paimon.maintenance.tags import delete_tag
from dagster_paimon.snapshot.entries import live_entries
from dagster_paimon.table import open_table
from tests.hooks import expire_changelogs, expire_partitions, expire_snapshots
from tests.java.paimon_java import auto_tags
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
)
from tests.maintenance.histories import EXPIRE_ALL_BUT_LAST, later_ms
from tests.maintenance.oracle import snapshot_ids

pytestmark = pytest.mark.slow

VERSIONS = ["paimon_java", "paimon_java_1_0"]
TABLE_DIR = os.path.join("db.db", "events")
HINTS = {"LATEST", "EARLIEST"}


def table_files(warehouse: str) -> set[str]:
    """Every file of db.events but the hints, relative to the table directory."""
    root = os.path.join(warehouse, TABLE_DIR)
    return {
        os.path.relpath(os.path.join(d, n), root)
        for d, _, names in os.walk(root)
        for n in names
        if n not in HINTS and not n.startswith(".")
    }


def data_files(warehouse: str) -> set[str]:
    """The table's files outside its snapshot, manifest and schema directories."""
    return {f for f in table_files(warehouse) if f.split(os.sep)[0].startswith("dt=")}


def java_rows(java, warehouse: str) -> list[tuple]:
    """Every row Java's reader returns, sorted, in field order (the model's: dt, id, v)."""
    return sorted(tuple(r) for r in java.read(warehouse, "db", "events"))


def copies(warehouse: str) -> str:
    """A copy of the warehouse for Java to maintain."""
    theirs = f"{warehouse}-java"
    shutil.copytree(warehouse, theirs)
    return theirs


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize(("layout", "partitioned"), [("bucketed", True), ("unaware", False)])
def test_snapshot_expiry_deletes_the_files_java_deletes(
    request, warehouse, version, layout, partitioned
):
    java = request.getfixturevalue(version)
    table, models = overwrite_history(warehouse, layout, partitioned)
    table.create_tag("t2", 2)
    theirs = copies(warehouse)
    assert expire_snapshots(table, overrides=EXPIRE_ALL_BUT_LAST, now_ms=later_ms()).expired_ids
    assert java.expire(theirs, "db", "events") == 4
    assert snapshot_ids(table) == snapshot_ids(open_table(theirs, "db.events")) == [5]
    assert table_files(warehouse) == table_files(theirs)
    assert java_rows(java, warehouse) == java_rows(java, theirs) == models[5]


@pytest.mark.parametrize("version", VERSIONS)
def test_decoupled_changelog_expiry_deletes_the_files_java_deletes(request, warehouse, version):
    """The appended files outlive their snapshots as the changelog, then go with it."""
    java = request.getfixturevalue(version)
    table, models = overwrite_history(
        warehouse, "bucketed", True, **{"changelog.num-retained.min": "10"}
    )
    append_commits(table, 1, first=9)
    theirs = copies(warehouse)
    expire_snapshots(table, overrides=EXPIRE_ALL_BUT_LAST, now_ms=later_ms())
    java.expire(theirs, "db", "events", retain_min=1, changelog_retain_min=10)
    assert table_files(warehouse) == table_files(theirs)
    keep_one = RetentionOverrides(retain_min=1, time_retained_ms=0, max_deletes=1000)
    assert expire_changelogs(table, overrides=keep_one, now_ms=later_ms()).expired_ids == (
        1,
        2,
        3,
        4,
    )
    assert java.expire(theirs, "db", "events", "changelogs") == 4
    assert table_files(warehouse) == table_files(theirs)
    expected = sorted([*models[5], *model(events(9))])
    assert java_rows(java, warehouse) == java_rows(java, theirs) == expected


@pytest.mark.parametrize("version", VERSIONS)
def test_partition_expiry_then_snapshot_expiry_as_java(request, warehouse, version):
    java = request.getfixturevalue(version)
    options = {"partition.expiration-time": "2 d", "partition.timestamp-formatter": "yyyy-MM-dd"}
    table = append_table(warehouse, "bucketed", **options)
    append_commits(table, 2)
    theirs = copies(warehouse)
    now = datetime(2024, 1, 4, 12)
    result = expire_partitions(table, now=now)
    done = java.expire_partitions(theirs, "db", "events", now.isoformat())
    assert sorted(f"dt={p['dt']}" for p in done["expired"]) == list(result.expired_partitions)
    assert result.expired_partitions == tuple(f"dt={d}" for d in DAYS[:2])
    assert done["commitKind"] == "OVERWRITE"
    expected = [r for r in model(events(0), events(1)) if r[0] == DAYS[2]]
    assert java_rows(java, warehouse) == java_rows(java, theirs) == expected
    expire_snapshots(table, overrides=EXPIRE_ALL_BUT_LAST, now_ms=later_ms())
    java.expire(theirs, "db", "events")
    # each side committed its own OVERWRITE: their metadata differs by name, their data not
    assert data_files(warehouse) == data_files(theirs)
    assert not any(f"dt={d}" in f for f in table_files(warehouse) for d in DAYS[:2])


@pytest.mark.parametrize("version", VERSIONS)
def test_tag_deletion_and_rollback_leave_the_files_java_leaves(request, warehouse, version):
    java = request.getfixturevalue(version)
    table, models = overwrite_history(warehouse, "unaware", True)
    for i in (2, 4):
        table.create_tag(f"t{i}", i)
    expire_snapshots(table, overrides=EXPIRE_ALL_BUT_LAST, now_ms=later_ms())
    theirs = copies(warehouse)
    delete_tag(table, "t2")
    assert auto_tags(java, theirs, "db", "events", delete="t2") == {"t4": 4}
    assert table_files(warehouse) == table_files(theirs)
    rollback_to(table, tag="t4")
    java.rollback(theirs, "db", "events", "tag", "t4")
    assert snapshot_ids(table) == snapshot_ids(open_table(theirs, "db.events")) == [4]
    assert table_files(warehouse) == table_files(theirs)
    assert java_rows(java, warehouse) == java_rows(java, theirs) == models[4]


@pytest.mark.parametrize("version", VERSIONS)
def test_java_reads_deletion_vectors_we_kept_through_expiry(request, warehouse, version):
    java = request.getfixturevalue(version)
    table = append_table(warehouse, "bucketed", **{"deletion-vectors.enabled": "true"})
    append_commits(table, 2)
    entry = max(live_entries(table, latest(table)), key=lambda e: e.file.row_count)
    written = file_rows(table, entry.file.file_name)
    everything = set(model(events(0), events(1)))
    for position in range(2):  # the second index file replaces the first
        delete_positions(table, {entry.file.file_name: list(range(position + 1))})
    expire_snapshots(table, overrides=EXPIRE_ALL_BUT_LAST, now_ms=later_ms())
    assert snapshot_ids(table) == [4]
    assert java_rows(java, warehouse) == sorted(everything - set(written[:2]))
