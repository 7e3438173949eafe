"""Orphan removal on real tables: strays and failed writes go, anything referenced stays."""

from __future__ import annotations

import os
import random
from dataclasses import replace

import pyarrow as pa
import pytest

from dagster_paimon.errors import InvalidArgumentError, MaintenanceAbortedError
from dagster_paimon.maintenance.options import HOUR_MS, RetentionOverrides
from dagster_paimon.storage.local import LocalFiles
from dagster_paimon.table import open_catalog
from tests.hooks import expire_snapshots, remove_orphans
from tests.lsm.kvmodel import read_rows
from tests.lsm.tables import SCHEMA, cdc_batch, compact
from tests.maintenance.histories import EXPIRE_ALL_BUT_LAST, history, later_ms
from tests.maintenance.oracle import (
    age_tree,
    all_files,
    all_refs,
    rows_at,
    snapshot_ids,
    tag_rows,
)

DECOUPLED = {"changelog.num-retained.min": "5"}


def stray(table, *parts: str, days: float = 0) -> str:
    """A file no metadata references, `days` old."""
    path = os.path.join(table.table_path, *parts)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(b"x" * 10)
    old = os.stat(path).st_mtime - days * 86_400
    os.utime(path, (old, old))
    return path


def test_old_strays_go_young_strays_and_live_files_stay(warehouse):
    table = history(warehouse, 5, compact_after=(2,))
    table.create_tag("t2", 2)
    age_tree(table.table_path)
    live = all_files(table.table_path)
    rows = {i: rows_at(table, i) for i in snapshot_ids(table)}
    old = [
        stray(table, "dt=2024-01-01", "bucket-0", "data-stray.parquet", days=2),
        stray(table, "dt=2024-01-02", "bucket-1", "changelog-stray.parquet", days=2),
        stray(table, "manifest", "manifest-stray-0", days=2),
        stray(table, "manifest", "manifest-list-stray-0", days=2),
        stray(table, "snapshot", ".snapshot-9.tmp", days=2),
        stray(table, "index", "index-stray", days=2),
        stray(table, "statistics", "stat-stray", days=2),
    ]
    young = [
        stray(table, "dt=2024-01-01", "bucket-0", "data-young.parquet"),
        stray(table, "manifest", "manifest-young-0", days=0.5),
    ]

    result = remove_orphans(table)

    assert sorted(result.orphans) == sorted(old)
    assert result.deleted == len(old) and result.bytes == 10 * len(old)
    assert result.metrics()["deleted"] == len(old)
    assert all_files(table.table_path) == live | set(young)
    for i, expected in rows.items():
        assert rows_at(table, i) == expected
    assert tag_rows(table, "t2") == rows[2]


def test_dry_run_lists_and_deletes_nothing(warehouse):
    table = history(warehouse, 3)
    path = stray(table, "dt=2024-01-01", "bucket-0", "data-stray.parquet", days=2)
    before = all_files(table.table_path)
    result = remove_orphans(table, dry_run=True)
    assert result.orphans == (path,) and result.deleted == 0 and result.dry_run
    assert all_files(table.table_path) == before


def test_the_threshold_is_configurable_and_never_reaches_younger_files(warehouse):
    table = history(warehouse, 2)
    two_hours = stray(table, "dt=2024-01-01", "bucket-0", "data-a.parquet", days=2 / 24)
    half_hour = stray(table, "dt=2024-01-01", "bucket-0", "data-b.parquet", days=0.5 / 24)
    result = remove_orphans(table, older_than_ms=HOUR_MS)
    assert result.orphans == (two_hours,)
    assert os.path.exists(half_hour)
    with pytest.raises(InvalidArgumentError, match="positive"):
        remove_orphans(table, older_than_ms=0)


def test_files_of_failed_writes_are_reclaimed(warehouse):
    table = history(warehouse, 2)
    rows = rows_at(table, 2)
    builder = table.new_batch_write_builder()
    writer = builder.new_write()
    writer.write_arrow(pa.Table.from_pylist(cdc_batch(random.Random(9), 9), SCHEMA))
    writer.prepare_commit()
    writer.close()
    uncommitted = all_files(table.table_path) - {
        p for r in all_refs(table).values() for p in r.data
    }
    uncommitted = {p for p in uncommitted if "/bucket-" in p}
    assert uncommitted
    age_tree(table.table_path)
    result = remove_orphans(table)
    assert set(result.orphans) == uncommitted
    assert not any(os.path.exists(p) for p in uncommitted)
    assert rows_at(table, 2) == rows


def test_files_only_tags_branches_and_changelogs_reference_are_kept(warehouse):
    table = history(warehouse, 6, compact_after=(3,), **DECOUPLED)
    table.create_tag("t2", 2)
    table.create_tag("fork", 3)
    table.branch_manager().create_branch("dev", "fork")
    table.delete_tag("fork")
    branch = open_catalog(warehouse).get_table("db.cdc$branch_dev")
    branch_rows = read_rows(branch)
    tagged = tag_rows(table, "t2")
    overrides = RetentionOverrides(retain_min=1, time_retained_ms=0, max_deletes=100)
    expire_snapshots(table, overrides=overrides, now_ms=later_ms())
    age_tree(table.table_path)
    before = all_files(table.table_path)

    result = remove_orphans(table)

    assert result.orphans == ()
    assert all_files(table.table_path) == before
    assert tag_rows(table, "t2") == tagged
    assert read_rows(branch) == branch_rows


def test_changelog_files_outliving_their_snapshots_are_kept(warehouse):
    options = {"changelog-producer": "input", **DECOUPLED}
    table = history(warehouse, 6, compact_after=(3,), **options)
    expire_snapshots(table, overrides=EXPIRE_ALL_BUT_LAST, now_ms=later_ms())
    age_tree(table.table_path)
    changelog_files = {p for p in all_files(table.table_path) if "/changelog-" in p}
    assert changelog_files
    assert remove_orphans(table).orphans == ()
    assert all(os.path.exists(p) for p in changelog_files)


class AncientAndRacing(LocalFiles):
    """Every file looks ancient, and a pending commit lands while references are listed."""

    def __init__(self, land):
        self.land = land

    def list_dir(self, directory):
        if directory.endswith("/tag") and self.land is not None:
            self.land, land = None, self.land
            land()
        return [replace(s, mtime_ms=0) for s in super().list_dir(directory)]


def test_a_commit_landing_during_the_scan_keeps_its_files(warehouse):
    table = history(warehouse, 2)
    builder = table.new_batch_write_builder()
    writer, committer = builder.new_write(), builder.new_commit()
    writer.write_arrow(pa.Table.from_pylist(cdc_batch(random.Random(5), 5), SCHEMA))
    messages = writer.prepare_commit()

    result = remove_orphans(table, files=AncientAndRacing(lambda: committer.commit(messages)))

    writer.close()
    committer.close()
    assert snapshot_ids(table) == [1, 2, 3]
    assert result.orphans == ()
    assert all(os.path.exists(p) for p in all_refs(table)[3].data)


def test_everything_expiry_leaves_behind_is_referenced(warehouse):
    table = history(warehouse, 6, compact_after=(2, 4))
    expire_snapshots(table, overrides=EXPIRE_ALL_BUT_LAST, now_ms=later_ms())
    age_tree(table.table_path)
    assert remove_orphans(table, dry_run=True).orphans == ()


def test_a_missing_manifest_of_a_live_snapshot_aborts(warehouse):
    table = history(warehouse, 3)
    stray(table, "dt=2024-01-01", "bucket-0", "data-stray.parquet", days=2)
    victim = next(n for n in all_refs(table)[1].metadata if not n.startswith("manifest-list-"))
    os.remove(os.path.join(table.table_path, "manifest", victim))
    before = all_files(table.table_path)
    with pytest.raises(MaintenanceAbortedError, match="missing"):
        remove_orphans(table)
    assert all_files(table.table_path) == before


def test_a_branch_without_schema_aborts(warehouse):
    table = history(warehouse, 2)
    os.makedirs(os.path.join(table.table_path, "branch", "branch-broken", "snapshot"))
    with pytest.raises(MaintenanceAbortedError, match="broken"):
        remove_orphans(table)


def test_compaction_outputs_are_referenced_once_committed(warehouse):
    table = history(warehouse, 4)
    compact(table, warehouse, full=True)
    age_tree(table.table_path)
    assert remove_orphans(table, dry_run=True).orphans == ()
