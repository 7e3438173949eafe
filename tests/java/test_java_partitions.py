"""Partition expiry against Paimon's own PartitionExpire (0.9 and 1.0) on copies of one table."""

from __future__ import annotations

import shutil
from datetime import datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pytest

from dagster_paimon.table import TableSpec, create_table, open_table
from tests.conftest import write_with_pypaimon
from tests.hooks import expire_partitions

pytestmark = pytest.mark.slow

NOW = datetime(2024, 1, 10, 12, 0)


def _label(spec: dict[str, str]) -> str:
    return ",".join(f"{k}={v}" for k, v in spec.items())


def _rows(java, warehouse: str) -> list:
    return sorted(map(str, java.read(warehouse, "db", "p")))


CASES = {
    "default formatter": (
        [pa.field("dt", pa.string(), nullable=False)],
        {"partition.expiration-time": "3 d"},
        [{"dt": f"2024-01-{d:02d}"} for d in range(1, 11)] + [{"dt": "garbage"}],
    ),
    "pattern over two columns": (
        [pa.field("dt", pa.string(), nullable=False), pa.field("hour", pa.string(), False)],
        {
            "partition.expiration-time": "2 h",
            "partition.timestamp-pattern": "$dt $hour:00:00",
            "partition.timestamp-formatter": "yyyyMMdd HH:mm:ss",
        },
        [{"dt": d, "hour": h} for d in ("20240109", "20240110") for h in ("09", "10", "11")],
    ),
    "int with a formatter": (
        [pa.field("day", pa.int32(), nullable=False)],
        {"partition.expiration-time": "1 d", "partition.timestamp-formatter": "yyyyMMdd"},
        [{"day": d} for d in (20240101, 20240108, 20240109, 20240110)],
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("version", ["0.9", "1.0"])
def test_same_partitions_dropped_as_java(tmp_path, request, case, version):
    java = request.getfixturevalue("paimon_java" if version == "0.9" else "paimon_java_1_0")
    fields, options, partitions = CASES[case]
    schema = pa.schema([*fields, pa.field("id", pa.int64(), False), pa.field("v", pa.string())])
    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "java")
    Path(ours).mkdir()
    keys = tuple(f.name for f in fields)
    table = create_table(ours, TableSpec("db", "p", schema, (*keys, "id"), 1, keys, options))
    for values in partitions:
        batch = [{**values, "id": i, "v": f"{values}-{i}"} for i in range(2)]
        write_with_pypaimon(table, pa.Table.from_pylist(batch, schema=schema))
    shutil.copytree(ours, theirs)

    result = expire_partitions(table, now=NOW)
    done = java.expire_partitions(theirs, "db", "p", NOW.isoformat())

    assert result.expired_partitions, case
    assert sorted(map(_label, done["expired"])) == sorted(result.expired_partitions)
    assert done["commitKind"] == "OVERWRITE"
    latest = open_table(ours, "db.p").snapshot_manager().get_latest_snapshot()
    assert latest.commit_kind == "OVERWRITE"
    # both Javas' readers see the same rows in both tables
    assert _rows(java, ours) == _rows(java, theirs)


@pytest.mark.parametrize("version", ["0.9", "1.0"])
def test_update_time_same_as_java(tmp_path, request, version):
    java = request.getfixturevalue("paimon_java" if version == "0.9" else "paimon_java_1_0")
    dt, key = pa.field("dt", pa.string(), False), pa.field("id", pa.int64(), False)
    schema = pa.schema([dt, key, pa.field("v", pa.string())])
    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "java")
    Path(ours).mkdir()
    options = {"partition.expiration-time": "1 h", "partition.expiration-strategy": "update-time"}
    table = create_table(ours, TableSpec("db", "p", schema, ("dt", "id"), 1, ("dt",), options))
    for dt in ("a", "b", "c"):
        rows = [{"dt": dt, "id": i, "v": dt} for i in range(2)]
        write_with_pypaimon(table, pa.Table.from_pylist(rows, schema=schema))
    builder = table.new_read_builder()
    newest = {
        s.partition.values[0]: max(f.creation_time.to_local_date_time() for f in s.files)
        for s in builder.new_scan().plan().splits()
    }
    # 'c' was written last: at its newest file's creation + 1 h, only 'a' and 'b' are older
    now = newest["c"] + timedelta(hours=1)
    assert newest["b"] < newest["c"]
    shutil.copytree(ours, theirs)

    result = expire_partitions(table, now=now)
    done = java.expire_partitions(theirs, "db", "p", now.isoformat())

    assert sorted(map(_label, done["expired"])) == sorted(result.expired_partitions)
    assert set(result.expired_partitions) == {"dt=a", "dt=b"}


def test_date_partitions_java_skips_and_we_drop(tmp_path, paimon_java):
    """apache/paimon#6439: Java reads a DATE partition's day number as its time and never
    expires it; we read the ISO date its directory is named by."""
    field = pa.field("d", pa.date32(), nullable=False)
    schema = pa.schema([field, pa.field("id", pa.int64(), False), pa.field("v", pa.string())])
    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "java")
    Path(ours).mkdir()
    options = {"partition.expiration-time": "2 d"}
    table = create_table(ours, TableSpec("db", "p", schema, ("d", "id"), 1, ("d",), options))
    for day in range(1, 6):
        rows = [{"d": datetime(2024, 1, day).date(), "id": 1, "v": "x"}]
        write_with_pypaimon(table, pa.Table.from_pylist(rows, schema=schema))
    shutil.copytree(ours, theirs)

    result = expire_partitions(table, now=NOW)
    done = paimon_java.expire_partitions(theirs, "db", "p", NOW.isoformat())

    assert result.expired_partitions == tuple(f"d=2024-01-0{d}" for d in range(1, 6))
    assert not done["expired"]
