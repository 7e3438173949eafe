"""The store seam: local fast path and any pypaimon FileIO behave the same to maintenance."""

from __future__ import annotations

import os
import time

import pytest

from dagster_paimon.maintenance.expire import expire_snapshots
from dagster_paimon.maintenance.files import FileIOFiles, LocalFiles, table_files
from dagster_paimon.maintenance.orphans import remove_orphans
from tests.maintenance.histories import EXPIRE_ALL_BUT_LAST, history, later_ms
from tests.maintenance.oracle import age_tree, rows_at, snapshot_ids


@pytest.fixture(params=["local", "fileio"])
def store(request, warehouse):
    table = history(warehouse, 4, compact_after=(2,))
    files = LocalFiles() if request.param == "local" else FileIOFiles(table.file_io)
    return table, files


def test_listing_reports_names_sizes_and_ages(store):
    table, files = store
    listed = {s.name: s for s in files.list_dir(os.path.join(table.table_path, "snapshot"))}
    assert {"snapshot-1", "LATEST"} <= set(listed)
    assert listed["snapshot-1"].size == os.path.getsize(
        os.path.join(table.table_path, "snapshot", "snapshot-1")
    )
    assert abs(listed["snapshot-1"].mtime_ms - time.time() * 1000) < 600_000
    assert not listed["snapshot-1"].is_dir
    assert files.list_dir(os.path.join(table.table_path, "missing")) == []


def test_deleting_counts_only_files_that_existed(store, tmp_path):
    _, files = store
    paths = [str(tmp_path / f"f{i}") for i in range(3)]
    for p in paths[:2]:
        open(p, "w").close()
    assert files.delete_files(paths) == 2
    assert not any(os.path.exists(p) for p in paths)


def test_maintenance_runs_the_same_through_either_store(store):
    table, files = store
    stray = os.path.join(table.table_path, "dt=2024-01-01", "bucket-0", "data-stray.parquet")
    open(stray, "w").close()
    age_tree(table.table_path)
    rows = rows_at(table, 5)
    result = expire_snapshots(table, overrides=EXPIRE_ALL_BUT_LAST, now_ms=later_ms(), files=files)
    assert result.expired_ids == (1, 2, 3, 4) and snapshot_ids(table) == [5]
    assert remove_orphans(table, files=files).orphans == (stray,)
    assert rows_at(table, 5) == rows


def test_local_tables_get_the_local_store(warehouse):
    assert isinstance(table_files(history(warehouse, 1)), LocalFiles)
