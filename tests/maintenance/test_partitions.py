"""Partition expiry on real pypaimon tables, checked by pypaimon's reader against a plain model."""

from __future__ import annotations

import json
import os
import time
from datetime import date, datetime, timedelta

import pyarrow as pa
import pytest
from pypaimon.schema.schema import Schema

from dagster_paimon import PaimonTable
from dagster_paimon.cli import main
from dagster_paimon.errors import InvalidArgumentError, InvalidOptionError, InvalidTableSpecError
from dagster_paimon.maintenance.partition_time import (
    JavaFormatter,
    PartitionTimeExtractor,
    UnparseableTime,
    parse_default,
)
from dagster_paimon.maintenance.partitions import (
    _sort_key,
    partition_states,
    plan_partition_expiry,
)
from dagster_paimon.partition import Partition
from dagster_paimon.snapshot.resolve import OVERWRITE
from dagster_paimon.table import TableSpec, create_table, open_catalog, open_table
from tests.conftest import data_files_on_disk, write_with_pypaimon
from tests.hooks import expire_partitions, expire_snapshots
from tests.maintenance.histories import EXPIRE_ALL_BUT_LAST, later_ms
from tests.maintenance.oracle import snapshot_ids

NOW = datetime(2024, 1, 10, 12, 0)
DAYS = [f"2024-01-{d:02d}" for d in range(1, 11)]


def _schema(*partition: pa.Field) -> pa.Schema:
    return pa.schema(
        [*partition, pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.string())]
    )


def _table(warehouse, schema: pa.Schema, partition: tuple[str, ...], **options: str):
    spec = TableSpec("db", "p", schema, (*partition, "id"), 1, partition, options)
    return create_table(warehouse, spec)


def _write(table, schema: pa.Schema, partitions: list[dict], rows: int = 3) -> list[dict]:
    """One pypaimon commit per partition; returns the rows written."""
    written = []
    for values in partitions:
        batch = [{**values, "id": i, "v": f"{values}-{i}"} for i in range(rows)]
        write_with_pypaimon(table, pa.Table.from_pylist(batch, schema=schema))
        written += batch
    return written


def _read(table) -> list[dict]:
    """Every row of the latest snapshot, by pypaimon's reader."""
    builder = table.new_read_builder()
    splits = builder.new_scan().plan().splits()
    return builder.new_read().to_arrow(splits).to_pylist() if splits else []


def _key(row: dict) -> tuple:
    return tuple(sorted((k, str(v)) for k, v in row.items()))


def _assert_rows(table, expected: list[dict]) -> None:
    assert sorted(map(_key, _read(table))) == sorted(map(_key, expected))


def _latest(table):
    return table.snapshot_manager().get_latest_snapshot()


DT = pa.field("dt", pa.string(), nullable=False)


def test_values_time_default_formatter_drops_old_partitions(warehouse):
    schema = _schema(DT)
    table = _table(warehouse, schema, ("dt",), **{"partition.expiration-time": "3 d"})
    rows = _write(table, schema, [{"dt": d} for d in DAYS])
    before = _latest(table).id

    result = expire_partitions(table, now=NOW)

    # expire before 2024-01-07 12:00: days 1..7 (day 7 at midnight is before noon)
    dropped = DAYS[:7]
    assert result.expired_partitions == tuple(f"dt={d}" for d in dropped)
    assert result.snapshot_id == before + 1 and not result.dry_run
    assert result.skipped_partitions == {} and result.deferred_partitions == 0
    latest = _latest(table)
    assert latest.commit_kind == OVERWRITE and latest.id == before + 1
    _assert_rows(table, [r for r in rows if r["dt"] not in dropped])
    assert result.to_dict()["expired_partitions"] == [f"dt={d}" for d in dropped]
    assert result.metrics()["expired_partitions"] == 7
    # a second run finds nothing
    again = expire_partitions(table, now=NOW)
    assert again.expired_partitions == () and again.snapshot_id is None
    assert _latest(table).id == latest.id


def test_dry_run_changes_nothing(warehouse):
    schema = _schema(DT)
    table = _table(warehouse, schema, ("dt",))
    rows = _write(table, schema, [{"dt": d} for d in DAYS[:4]])
    files = data_files_on_disk(table)
    ids = snapshot_ids(table)

    dry = expire_partitions(
        table, expiration_time=timedelta(days=8, hours=13), now=NOW, dry_run=True
    )

    assert dry.dry_run and dry.expired_partitions == ("dt=2024-01-01",)
    assert dry.snapshot_id is None
    assert snapshot_ids(table) == ids and data_files_on_disk(table) == files
    _assert_rows(table, rows)
    assert "would drop 1 partitions" in dry.summary()


def test_pattern_over_two_columns(warehouse):
    hour = pa.field("hour", pa.string(), nullable=False)
    day = pa.field("dt", pa.string(), nullable=False)
    schema = _schema(day, hour)
    table = _table(
        warehouse,
        schema,
        ("dt", "hour"),
        **{
            "partition.timestamp-pattern": "$dt $hour:00:00",
            "partition.timestamp-formatter": "yyyyMMdd HH:mm:ss",
        },
    )
    parts = [{"dt": d, "hour": h} for d in ("20240109", "20240110") for h in ("09", "10", "11")]
    rows = _write(table, schema, parts, rows=2)

    result = expire_partitions(table, expiration_time=timedelta(hours=2), now=NOW)

    # before 2024-01-10 10:00: all of the 9th and 09:00 of the 10th
    assert result.expired_partitions == (
        "dt=20240109,hour=09",
        "dt=20240109,hour=10",
        "dt=20240109,hour=11",
        "dt=20240110,hour=09",
    )
    kept = [r for r in rows if (r["dt"], r["hour"]) in {("20240110", "10"), ("20240110", "11")}]
    _assert_rows(table, kept)


def test_date_partition_column(warehouse):
    field = pa.field("d", pa.date32(), nullable=False)
    schema = _schema(field)
    table = _table(warehouse, schema, ("d",))
    days = [date(2024, 1, d) for d in range(1, 6)]
    rows = _write(table, schema, [{"d": d} for d in days])

    result = expire_partitions(
        table, expiration_time=timedelta(days=2), now=datetime(2024, 1, 5, 12)
    )

    assert result.expired_partitions == ("d=2024-01-01", "d=2024-01-02", "d=2024-01-03")
    _assert_rows(table, [r for r in rows if r["d"] >= date(2024, 1, 4)])


def test_int_partition_with_formatter(warehouse):
    field = pa.field("day", pa.int32(), nullable=False)
    schema = _schema(field)
    table = _table(warehouse, schema, ("day",), **{"partition.timestamp-formatter": "yyyyMMdd"})
    rows = _write(table, schema, [{"day": d} for d in (20240101, 20240108, 20240110)])

    result = expire_partitions(table, expiration_time=timedelta(days=1), now=NOW)

    assert result.expired_partitions == ("day=20240101", "day=20240108")
    _assert_rows(table, [r for r in rows if r["day"] == 20240110])


def test_update_time_uses_last_file_creation(warehouse):
    schema = _schema(DT)
    table = _table(warehouse, schema, ("dt",), **{"partition.expiration-strategy": "update-time"})
    rows = _write(table, schema, [{"dt": "old"}, {"dt": "also-old"}])
    time.sleep(0.05)
    rows += _write(table, schema, [{"dt": "new"}])
    # the newest creation time of the 'new' partition, read by pypaimon itself
    builder = table.new_read_builder()
    created = {
        f.file_name: f.creation_time.to_local_date_time()
        for s in builder.new_scan().plan().splits()
        for f in s.files
        if s.partition.values == ["new"]
    }
    newest = max(created.values())
    expiration = timedelta(hours=1)

    # cutoff == the newest file of 'new': not after it, so 'new' stays
    result = expire_partitions(table, expiration_time=expiration, now=newest + expiration)

    assert result.strategy == "update-time"
    assert result.expired_partitions == ("dt=also-old", "dt=old")  # sorted by value text
    _assert_rows(table, [r for r in rows if r["dt"] == "new"])


def test_update_time_counts_files_a_later_commit_deleted(warehouse):
    """Java's PartitionEntry takes the newest creation time of ADD and DELETE entries alike."""
    schema = _schema(DT)
    table = _table(warehouse, schema, ("dt",))
    _write(table, schema, [{"dt": "a"}, {"dt": "b"}])
    states = {s.partition.label(): s for s in partition_states(table, _latest(table))}
    assert set(states) == {"dt=a", "dt=b"}
    assert states["dt=a"].file_count == 1 and states["dt=a"].last_creation_ms is not None
    assert states["dt=a"].last_creation_ms <= states["dt=b"].last_creation_ms


def test_max_num_and_batches(warehouse):
    schema = _schema(DT)
    table = _table(
        warehouse,
        schema,
        ("dt",),
        **{
            "partition.expiration-time": "1 d",
            "partition.expiration-max-num": "4",
            "partition.expiration-batch-size": "3",
        },
    )
    rows = _write(table, schema, [{"dt": d} for d in DAYS])
    before = _latest(table).id

    limited = expire_partitions(table, max_num=2, now=NOW, dry_run=True)
    assert limited.expired_partitions == ("dt=2024-01-01", "dt=2024-01-02")
    assert limited.deferred_partitions == 7  # days 1..9 expired, 2 taken

    result = expire_partitions(table, now=NOW)  # the table's max-num 4, batches of 3
    dropped = DAYS[:4]
    assert result.expired_partitions == tuple(f"dt={d}" for d in dropped)
    assert result.deferred_partitions == 5
    assert result.snapshot_ids == (before + 1, before + 2)
    manager = table.snapshot_manager()
    kinds = [manager.get_snapshot_by_id(i).commit_kind for i in result.snapshot_ids]
    assert kinds == [OVERWRITE, OVERWRITE]
    _assert_rows(table, [r for r in rows if r["dt"] not in dropped])


@pytest.mark.parametrize("clean", [False, True])
def test_snapshot_expiry_then_removes_the_dropped_files(warehouse, clean):
    hour = pa.field("hour", pa.string(), nullable=False)
    schema = _schema(DT, hour)
    options = {"snapshot.clean-empty-directories": "true"} if clean else {}
    table = _table(warehouse, schema, ("dt", "hour"), **options)
    parts = [{"dt": d, "hour": h} for d in DAYS[:3] for h in ("01", "02")]
    rows = _write(table, schema, parts)
    files_before = data_files_on_disk(table)

    expire_partitions(table, expiration_time=timedelta(days=8, hours=13), now=NOW)
    assert data_files_on_disk(table) == files_before  # OVERWRITE deletes no file

    expire_snapshots(table, overrides=EXPIRE_ALL_BUT_LAST, now_ms=later_ms())

    kept = [r for r in rows if r["dt"] != "2024-01-01"]
    _assert_rows(table, kept)
    on_disk = data_files_on_disk(table)
    assert on_disk < files_before and len(files_before - on_disk) == 2
    root = table.table_path.rstrip("/")
    if clean:  # bucket, hour and day directories of the dropped day are gone
        assert not os.path.exists(f"{root}/dt=2024-01-01")
    else:  # as Java leaves them by default
        assert os.listdir(f"{root}/dt=2024-01-01/hour=01/bucket-0") == []
    assert os.listdir(f"{root}/dt=2024-01-02/hour=01/bucket-0")


def test_unparseable_values_are_skipped_and_named(warehouse):
    schema = _schema(DT)
    table = _table(warehouse, schema, ("dt",), **{"partition.timestamp-formatter": "yyyyMMdd"})
    rows = _write(table, schema, [{"dt": "20240101"}, {"dt": "garbage"}, {"dt": "2024-01-02"}])

    result = expire_partitions(table, expiration_time=timedelta(days=1), now=NOW)

    assert result.expired_partitions == ("dt=20240101",)
    assert set(result.skipped_partitions) == {"dt=garbage", "dt=2024-01-02"}
    why = result.skipped_partitions["dt=garbage"]
    assert "partition.timestamp-formatter='yyyyMMdd'" in why and "garbage" in why
    assert result.metrics()["skipped_partitions"] == 2
    assert "skipped 2" in result.summary()
    _assert_rows(table, [r for r in rows if r["dt"] != "20240101"])


@pytest.mark.parametrize("formatter", ["yyyy-MMM-dd", "yyyy-MM-dd hh:mm a", "'unclosed"])
def test_bad_formatter_refused_table_unchanged(warehouse, formatter):
    schema = _schema(DT)
    table = _table(warehouse, schema, ("dt",), **{"partition.timestamp-formatter": formatter})
    _write(table, schema, [{"dt": "2024-01-01"}])
    ids = snapshot_ids(table)
    with pytest.raises(InvalidOptionError, match=r"partition\.timestamp-formatter"):
        expire_partitions(table, expiration_time=timedelta(days=1), now=NOW)
    assert snapshot_ids(table) == ids


def test_refusals(warehouse):
    schema = _schema(DT)
    table = _table(warehouse, schema, ("dt",))
    _write(table, schema, [{"dt": "2024-01-01"}])
    ids = snapshot_ids(table)
    with pytest.raises(InvalidArgumentError, match=r"partition\.expiration-time"):
        expire_partitions(table, now=NOW)
    with pytest.raises(InvalidArgumentError, match="strategy"):
        expire_partitions(table, expiration_time=timedelta(1), strategy="bogus", now=NOW)
    with pytest.raises(InvalidArgumentError, match="max_num"):
        expire_partitions(table, expiration_time=timedelta(1), max_num=0, now=NOW)
    with pytest.raises(InvalidArgumentError, match="negative"):
        expire_partitions(table, expiration_time=timedelta(-1), now=NOW)
    assert snapshot_ids(table) == ids


def test_bad_strategy_option(warehouse):
    schema = _schema(DT)
    spec = TableSpec(
        "db", "q", schema, ("dt", "id"), 1, ("dt",), {"partition.expiration-strategy": "nope"}
    )
    table = create_table(warehouse, spec)
    with pytest.raises(InvalidOptionError, match=r"partition\.expiration-strategy"):
        expire_partitions(table, expiration_time=timedelta(1), now=NOW)


def test_unpartitioned_tables_refused_append_tables_planned(warehouse):
    schema = _schema(DT)
    flat = create_table(warehouse, TableSpec("db", "flat", schema, ("dt", "id"), 1))
    with pytest.raises(InvalidTableSpecError, match="not partitioned"):
        expire_partitions(flat, expiration_time=timedelta(1))
    catalog = open_catalog(warehouse)
    catalog.create_table("db.log", Schema.from_pyarrow_schema(schema, partition_keys=["dt"]), False)
    log_table = catalog.get_table("db.log")
    # an append table expires partitions as a primary-key table does (test_append_tables.py)
    assert plan_partition_expiry(log_table, expiration_time=timedelta(1)).preview().dry_run


def test_paimon_table_and_cli(warehouse, capsys):
    schema = _schema(DT)
    table = _table(warehouse, schema, ("dt",), **{"partition.expiration-time": "1 d"})
    _write(table, schema, [{"dt": "2000-01-01"}, {"dt": "2999-01-01"}])
    opened = PaimonTable.open(warehouse, "db.p")
    dry = opened.expire_partitions(dry_run=True)
    assert dry.expired_partitions == ("dt=2000-01-01",)

    args = ["--warehouse", warehouse, "--table", "db.p", "--json"]
    code = main(["expire-partitions", *args, "--dry-run", "--older-than", "7d"])
    out, err = capsys.readouterr()
    assert code == 0, err
    payload = json.loads(out)
    assert payload["expired_partitions"] == ["dt=2000-01-01"] and payload["dry_run"] is True
    assert payload["snapshot_id"] is None

    code = main(["expire-partitions", *args, "--strategy", "values-time", "--max-num", "5"])
    out, err = capsys.readouterr()
    assert code == 0, err
    payload = json.loads(out)
    assert payload["expired_partitions"] == ["dt=2000-01-01"]
    assert payload["snapshot_id"] == 3
    assert [r["dt"] for r in _read(open_table(warehouse, "db.p"))] == ["2999-01-01"] * 3

    code = main(["expire-partitions", "--warehouse", warehouse, "--table", "db.p", "--max-num"])
    capsys.readouterr()
    assert code == 2


# -- the time extractor (Java's PartitionTimeExtractor) -----------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2024-01-05", datetime(2024, 1, 5)),
        ("2024-1-5", datetime(2024, 1, 5)),
        ("2024-01-05 07:08:09", datetime(2024, 1, 5, 7, 8, 9)),
        ("2024-01-05 7:8:9.5", datetime(2024, 1, 5, 7, 8, 9, 500000)),
        ("2024-13-01", datetime(2025, 1, 1)),  # lenient: months roll over
        ("2024-02-30", datetime(2024, 3, 1)),
    ],
)
def test_default_formatter(text, expected):
    assert parse_default(text) == expected


@pytest.mark.parametrize("text", ["20240105", "2024-01-05 10", "2024-01-05T10:00:00", "x"])
def test_default_formatter_refuses(text):
    with pytest.raises(UnparseableTime):
        parse_default(text)


@pytest.mark.parametrize(
    ("pattern", "text", "expected"),
    [
        ("yyyyMMdd", "20240105", datetime(2024, 1, 5)),
        ("yyyyMMddHH", "2024010510", datetime(2024, 1, 5, 10)),  # an hour alone: :00:00
        ("yyyy-MM-dd HH:mm", "2024-01-05 10:30", datetime(2024, 1, 5, 10, 30)),
        ("yyyy/M/d", "2024/1/5", datetime(2024, 1, 5)),
        ("yyyy-MM-dd'T'HH:mm:ss", "2024-01-05T10:30:01", datetime(2024, 1, 5, 10, 30, 1)),
        ("yyyyMMdd HH:ss", "20240105 10:30", datetime(2024, 1, 5)),  # no minute: the date only
        ("yyyy-MM-dd", "2023-02-30", datetime(2023, 2, 28)),  # SMART clamps the day
        ("yyMMdd", "240105", datetime(2024, 1, 5)),
    ],
)
def test_java_formatter(pattern, text, expected):
    assert JavaFormatter.compile(pattern).parse(text) == expected


@pytest.mark.parametrize(
    ("pattern", "text"),
    [("yyyyMMdd", "2024015"), ("yyyyMMdd", "20241301"), ("yyyyMM", "202401"), ("HH", "10")],
)
def test_java_formatter_refuses(pattern, text):
    with pytest.raises(UnparseableTime):
        JavaFormatter.compile(pattern).parse(text)


def test_pattern_replaces_every_key():
    extractor = PartitionTimeExtractor.of("$dt $hour:00:00", None)
    assert extractor.extract(["dt", "hour"], ["2024-01-05", "7"]) == datetime(2024, 1, 5, 7)
    assert PartitionTimeExtractor.of(None, None).text(["a", "b"], ["x", "y"]) == "x"


def test_expired_partitions_sort_a_null_value_by_the_default_name_option():
    """PartitionExpireStrategy.toPartitionValue: null is partition.default-name, blank stays."""
    parts = [Partition(("b",)), Partition((None,)), Partition(("",)), Partition(("z",))]
    assert sorted(parts, key=lambda p: _sort_key(p, "a-null")) == [
        Partition(("",)),
        Partition((None,)),
        Partition(("b",)),
        Partition(("z",)),
    ]
    assert sorted(parts, key=lambda p: _sort_key(p, "zz"))[-1] == Partition((None,))
