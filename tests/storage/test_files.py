"""The store seam: a local disk and a real S3 API (moto) behave the same to maintenance."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

import pytest

from dagster_paimon.maintenance.orphans import plan_orphan_removal
from dagster_paimon.storage.local import LocalFiles
from dagster_paimon.storage.s3 import S3Files, S3Settings
from dagster_paimon.storage.warehouse import table_files
from tests.hooks import context, expire_snapshots, remove_orphans
from tests.maintenance.histories import EXPIRE_ALL_BUT_LAST, history, later_ms
from tests.maintenance.oracle import rows_at, snapshot_ids

DAY_MS = 86_400_000


@pytest.fixture(params=["local", pytest.param("s3", marks=pytest.mark.s3)])
def store(request, warehouse):
    """A four-commit history with a full compaction, on a local disk or on S3."""
    if request.param == "local":
        return history(warehouse, 4, compact_after=(2,)), LocalFiles()
    uri, options = request.getfixturevalue("s3_warehouse")
    table = history(uri, 4, compact_after=(2,), catalog_options=options)
    return table, S3Files(S3Settings.from_options(options))


def test_listing_reports_names_sizes_and_ages(store):
    table, files = store
    listed = {s.name: s for s in files.list_dir(f"{table.table_path}/snapshot")}
    assert {"snapshot-1", "LATEST"} <= set(listed)
    snapshot_1 = listed["snapshot-1"]
    assert snapshot_1.size == table.file_io.get_file_size(snapshot_1.path) > 0
    assert abs(snapshot_1.mtime_ms - time.time() * 1000) < 600_000
    assert not snapshot_1.is_dir
    buckets = {s.name for s in files.list_dir(f"{table.table_path}/dt=2024-01-01") if s.is_dir}
    assert buckets == {"bucket-0", "bucket-1"}
    assert files.list_dir(f"{table.table_path}/missing") == []


def test_local_deletes_count_only_files_that_existed(tmp_path):
    paths = [str(tmp_path / f"f{i}") for i in range(3)]
    for p in paths[:2]:
        open(p, "w").close()
    assert LocalFiles().delete_files(paths) == 2
    assert not any(os.path.exists(p) for p in paths)


def test_maintenance_runs_the_same_through_either_store(store):
    table, files = store
    stray = f"{table.table_path}/dt=2024-01-01/bucket-0/data-stray.parquet"
    table.file_io.write_file(stray, "not referenced by any snapshot", overwrite=False)
    rows = rows_at(table, 5)
    result = expire_snapshots(table, overrides=EXPIRE_ALL_BUT_LAST, now_ms=later_ms(), files=files)
    assert result.expired_ids == (1, 2, 3, 4) and snapshot_ids(table) == [5]
    assert remove_orphans(table, now_ms=later_ms(), files=files).orphans == ()
    assert remove_orphans(table, now_ms=later_ms() + 2 * DAY_MS, files=files).orphans == (stray,)
    assert not table.file_io.exists(stray)
    assert rows_at(table, 5) == rows


def test_tables_get_the_store_of_their_warehouse(warehouse):
    assert isinstance(table_files(history(warehouse, 1)), LocalFiles)


@contextmanager
def counted(client, operation: str) -> Iterator[list[int]]:
    """Count requests of one operation through botocore's event hooks; the real calls run."""
    calls = [0]

    def count(**_) -> None:
        calls[0] += 1

    event = f"before-call.s3.{operation}"
    client.meta.events.register(event, count)
    try:
        yield calls
    finally:
        client.meta.events.unregister(event, count)


@pytest.mark.s3
def test_s3_listings_page_and_deletes_batch_by_a_thousand(s3_server):
    bucket = s3_server.create_bucket()
    keys = [f"t/bucket-0/data-{i:05d}.parquet" for i in range(2_345)]
    client = s3_server.client()
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(lambda k: client.put_object(Bucket=bucket, Key=k, Body=b"x"), keys))
    client.put_object(Bucket=bucket, Key="t/bucket-0/nested/data-x.parquet", Body=b"x")
    settings = S3Settings.from_options(s3_server.catalog_options())
    files = S3Files(settings)
    with counted(settings.client(), "ListObjectsV2") as lists:
        listed = files.list_dir(f"s3://{bucket}/t/bucket-0/")
    assert lists[0] == 3
    assert sorted(s.name for s in listed if not s.is_dir) == sorted(k.rsplit("/")[-1] for k in keys)
    assert [s.name for s in listed if s.is_dir] == ["nested"]

    paths = [f"s3://{bucket}/{k}" for k in keys]
    with counted(settings.client(), "DeleteObjects") as deletes:
        assert files.delete_files(paths) == len(keys)
    assert deletes[0] == 3
    assert s3_server.keys(bucket) == ["t/bucket-0/nested/data-x.parquet"]


@pytest.mark.s3
def test_s3_orphan_ages_come_from_last_modified(s3_warehouse):
    uri, options = s3_warehouse
    table = history(uri, 2, catalog_options=options)
    stray = f"{table.table_path}/dt=2024-01-02/bucket-1/data-stray.parquet"
    table.file_io.write_file(stray, "stray", overwrite=False)
    now = int(time.time() * 1000)
    assert (
        plan_orphan_removal(table, older_than_ms=DAY_MS, context=context(now_ms=now)).orphans == ()
    )
    plan = plan_orphan_removal(
        table, older_than_ms=DAY_MS, context=context(now_ms=now + DAY_MS + 60_000)
    )
    assert [s.path for s in plan.orphans] == [stray]
    assert abs(plan.orphans[0].mtime_ms - now) < 60_000
