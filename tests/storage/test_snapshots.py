"""Atomic snapshot creation: hard links on local disks, conditional PUTs on a real S3 API (moto)."""

import multiprocessing
from pathlib import Path

import pyarrow as pa
import pytest

from dagster_paimon.errors import UnsupportedWarehouseError
from dagster_paimon.storage.s3 import S3Settings
from dagster_paimon.storage.snapshots import create_snapshot_if_absent
from dagster_paimon.table import TableSpec, create_table, open_table

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.string())])


def test_local_create_if_absent_has_exactly_one_winner(tmp_path):
    target = str(tmp_path / "snapshot" / "snapshot-1")
    from pypaimon.filesystem.local_file_io import LocalFileIO

    outcomes = [create_snapshot_if_absent(LocalFileIO(), target, f"{i}") for i in range(3)]
    assert outcomes == [True, False, False]
    assert Path(target).read_text() == "0"
    assert sorted(p.name for p in (tmp_path / "snapshot").iterdir()) == ["snapshot-1"]


@pytest.mark.s3
def test_s3_conditional_put_refuses_the_second_writer(s3_warehouse):
    uri, options = s3_warehouse
    table = create_table(uri, TableSpec("db", "t", SCHEMA, ("id",), 1), options)
    path = f"{table.table_path}/snapshot/snapshot-42"
    assert create_snapshot_if_absent(table.file_io, path, "first")
    assert not create_snapshot_if_absent(table.file_io, path, "second")
    assert table.file_io.read_file_utf8(path) == "first"


@pytest.mark.s3
def test_a_store_that_ignores_if_none_match_is_refused_before_any_snapshot(s3_warehouse):
    uri, options = s3_warehouse
    table = create_table(uri, TableSpec("db", "t", SCHEMA, ("id",), 1), options)
    client = S3Settings.from_options(options).client()
    event = "before-parameter-build.s3.PutObject"

    def drop_condition(params, **_) -> None:
        params.pop("IfNoneMatch", None)

    client.meta.events.register(event, drop_condition)
    try:
        with pytest.raises(UnsupportedWarehouseError, match="ignores If-None-Match"):
            create_snapshot_if_absent(table.file_io, f"{table.table_path}/snapshot/snapshot-1", "x")
    finally:
        client.meta.events.unregister(event, drop_condition)
    assert table.file_io.list_status(f"{table.table_path}/snapshot") == []


def _append_commit(uri: str, options: dict, worker: int) -> int:
    """One process: write ten rows with pypaimon's writer, commit them through our commit path."""
    from dagster_paimon.commit.changes import BucketChange
    from dagster_paimon.commit.producers import AppendProducer
    from dagster_paimon.partition import Partition

    table = open_table(uri, "db.race", options)
    write = table.new_batch_write_builder().new_write()
    write.write_arrow(
        pa.table(
            {"id": list(range(worker * 10, worker * 10 + 10)), "v": [f"w{worker}"] * 10},
            schema=SCHEMA,
        )
    )
    messages = write.prepare_commit()
    write.close()
    fields = tuple(table.partition_keys_fields)
    changes = [
        BucketChange(Partition(tuple(m.partition), fields), m.bucket, 2, added=tuple(m.new_files))
        for m in messages
    ]
    producer = AppendProducer(table, changes, commit_user=f"race-{worker}", identifier=worker)
    return producer.commit().snapshot.id


@pytest.mark.s3
@pytest.mark.slow
def test_eight_processes_commit_concurrently_without_losing_a_snapshot(s3_warehouse):
    uri, options = s3_warehouse
    create_table(uri, TableSpec("db", "race", SCHEMA, ("id",), 2), options)
    with multiprocessing.get_context("spawn").Pool(8) as pool:
        ids = pool.starmap(_append_commit, [(uri, options, w) for w in range(8)])
    assert sorted(ids) == list(range(1, 9))
    table = open_table(uri, "db.race", options)
    users = {table.snapshot_manager().get_snapshot_by_id(i).commit_user for i in range(1, 9)}
    assert users == {f"race-{w}" for w in range(8)}
    builder = table.new_read_builder()
    rows = builder.new_read().to_arrow(builder.new_scan().plan().splits()).to_pylist()
    assert sorted(r["id"] for r in rows) == list(range(80))
