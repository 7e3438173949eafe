"""Atomic snapshot creation: hard links on local disks, conditional PUTs on a real S3 API (moto);
atomic replacement of the metadata files maintenance rewrites."""

import multiprocessing
import os
import signal
import time
from pathlib import Path

import pyarrow as pa
import pytest

from dagster_paimon.errors import UnsupportedWarehouseError
from dagster_paimon.storage.s3 import S3Settings
from dagster_paimon.storage.snapshots import create_snapshot_if_absent, replace_file
from dagster_paimon.table import TableSpec, create_table, open_table

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.string())])


def test_local_create_if_absent_has_exactly_one_winner(tmp_path):
    target = str(tmp_path / "snapshot" / "snapshot-1")
    from pypaimon.filesystem.local_file_io import LocalFileIO

    outcomes = [create_snapshot_if_absent(LocalFileIO(), target, f"{i}") for i in range(3)]
    assert outcomes == [True, False, False]
    assert Path(target).read_text() == "0"
    assert sorted(p.name for p in (tmp_path / "snapshot").iterdir()) == ["snapshot-1"]


def _replace_forever(path: str) -> None:
    """Alternate two 4 MiB contents under one name until killed."""
    from pypaimon.filesystem.local_file_io import LocalFileIO

    file_io = LocalFileIO()
    for i in range(1_000_000):
        replace_file(file_io, path, ("ab"[i % 2]) * (4 << 20))


def test_a_replace_killed_at_any_instant_leaves_the_old_or_the_new_bytes(tmp_path):
    path = str(tmp_path / "tag" / "tag-t1")
    os.makedirs(os.path.dirname(path))
    Path(path).write_text("a" * (4 << 20))
    context = multiprocessing.get_context("spawn")
    for delay in (0.3, 0.45, 0.6, 0.75):
        child = context.Process(target=_replace_forever, args=(path,))
        child.start()
        time.sleep(delay)
        os.kill(child.pid, signal.SIGKILL)
        child.join()
        content = Path(path).read_text()
        assert content in ("a" * (4 << 20), "b" * (4 << 20)), f"torn after {delay} s"
    leftovers = [p.name for p in (tmp_path / "tag").iterdir() if p.name != "tag-t1"]
    assert all(name.startswith(".tag-t1.") for name in leftovers), leftovers  # orphan temps


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
