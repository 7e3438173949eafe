"""Record-level expiry in compaction (Java's RecordLevelExpire, RecordLevelExpireTest).

Rows whose time field is older than now minus record-level.expire-time are dropped by every
compaction reader (null times are kept); files whose statistics show an expired minimum are
rewritten instead of upgraded, even alone at the top level in a full compaction.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime

import pyarrow as pa
import pytest
from pypaimon_rust.datafusion import SQLContext

from dagster_paimon.errors import InvalidOptionError
from dagster_paimon.ingest.arrow import ingest_arrow
from dagster_paimon.lsm.model.levels import read_levels
from dagster_paimon.lsm.model.record_expiry import RecordLevelExpire
from dagster_paimon.table import TableSpec, create_table, open_table
from tests.conftest import write_with_pypaimon
from tests.lsm.kvmodel import read_rows
from tests.lsm.tables import compact_db_t as compact

DAY_S = 24 * 3600
NOW = int(time.time())
EXPIRE = {"record-level.expire-time": "1 d", "record-level.time-field": "t"}


def schema_with(time_type: pa.DataType) -> pa.Schema:
    """id, a time field t of the given type, and a value."""
    return pa.schema(
        [
            pa.field("id", pa.int64(), nullable=False),
            pa.field("t", time_type),
            pa.field("v", pa.string()),
        ]
    )


def make(warehouse: str, time_type: pa.DataType, **options: str):
    """A one-bucket table with record-level expiry on t."""
    spec = TableSpec("db", "t", schema_with(time_type), ("id",), 1, (), {**EXPIRE, **options})
    return create_table(warehouse, spec)


def ids(warehouse: str) -> list[int]:
    """Ids pypaimon reads."""
    return sorted(r["id"] for r in read_rows(open_table(warehouse, "db.t")))


OLD, FRESH = NOW - 3 * DAY_S, NOW - 3600


@pytest.mark.parametrize(
    ("time_type", "old", "fresh"),
    [
        (pa.int32(), OLD, FRESH),
        (pa.int64(), OLD, FRESH),
        (pa.int64(), OLD * 1000, FRESH * 1000),  # milliseconds from 10^12 on
        (pa.timestamp("us"), datetime.fromtimestamp(OLD), datetime.fromtimestamp(FRESH)),
        (
            pa.timestamp("us", tz="UTC"),
            datetime.fromtimestamp(OLD, UTC),
            datetime.fromtimestamp(FRESH, UTC),
        ),
    ],
    ids=["int-seconds", "bigint-seconds", "bigint-millis", "timestamp", "timestamp-ltz"],
)
def test_compaction_drops_expired_rows_and_keeps_fresh_and_null_times(
    warehouse, time_type, old, fresh
):
    table = make(warehouse, time_type)
    rows = [
        {"id": 1, "t": old, "v": "old"},
        {"id": 2, "t": fresh, "v": "fresh"},
        {"id": 3, "t": None, "v": "no time"},
    ]
    write_with_pypaimon(table, pa.Table.from_pylist(rows, schema_with(time_type)))
    newer = [{"id": 4, "t": old, "v": "old too"}, {"id": 2, "t": fresh, "v": "fresh again"}]
    write_with_pypaimon(
        open_table(warehouse, "db.t"), pa.Table.from_pylist(newer, schema_with(time_type))
    )
    assert ids(warehouse) == [1, 2, 3, 4]  # nothing expires on read
    compact(warehouse, full=True)
    assert ids(warehouse) == [2, 3]
    got = {r["id"]: r["v"] for r in read_rows(open_table(warehouse, "db.t"))}
    assert got == {2: "fresh again", 3: "no time"}


def test_an_expired_top_level_file_is_rewritten_by_a_full_compaction(warehouse):
    """Statistics (metadata.stats-mode=full) show an expired minimum: rewrite, not keep."""
    make(warehouse, pa.int64(), **{"metadata.stats-mode": "full"})
    data = pa.Table.from_pylist(
        [{"id": i, "t": OLD if i < 5 else FRESH, "v": str(i)} for i in range(10)],
        schema_with(pa.int64()),
    )
    ingest_arrow(open_table(warehouse, "db.t"), data)
    levels = read_levels(open_table(warehouse, "db.t"), with_stats=True)
    level0 = levels.buckets[0].levels.level0[0]
    expire = RecordLevelExpire.for_table(levels.schema, NOW)
    assert expire is not None and expire.is_expired_file(level0, levels.schemas.get)

    result = compact(warehouse, full=True)
    rewritten = [f.file_name for f in result.tasks[0].rewritten_files]
    assert rewritten == [level0.file_name]  # not upgraded: it holds expired rows
    assert ids(warehouse) == list(range(5, 10))
    top = read_levels(open_table(warehouse, "db.t"), with_stats=True).buckets[0].levels
    assert not expire.is_expired_file(top.all_files()[0], levels.schemas.get)
    assert compact(warehouse, full=True).tasks == ()  # nothing left to expire


def test_files_without_statistics_are_not_judged_expired(warehouse):
    """pypaimon writes no value statistics: its files are upgraded, as Java would."""
    table = make(warehouse, pa.int64())
    data = pa.Table.from_pylist([{"id": 1, "t": OLD, "v": "x"}], schema_with(pa.int64()))
    write_with_pypaimon(table, data)
    levels = read_levels(open_table(warehouse, "db.t"), with_stats=True)
    expire = RecordLevelExpire.for_table(levels.schema, NOW)
    assert expire is not None
    assert not expire.is_expired_file(levels.buckets[0].levels.level0[0], levels.schemas.get)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"record-level.expire-time": "1 d"}, "'record-level.time-field' is not"),
        ({**EXPIRE, "record-level.time-field": "nope"}, "'nope', not a column"),
        ({**EXPIRE, "record-level.time-field": "v"}, "must be INT, BIGINT or TIMESTAMP"),
    ],
)
def test_a_bad_time_field_is_refused_before_anything_is_written(warehouse, options, message):
    spec = TableSpec("db", "t", schema_with(pa.int64()), ("id",), 1, (), options)
    table = create_table(warehouse, spec)
    write_with_pypaimon(
        table, pa.Table.from_pylist([{"id": 1, "t": OLD, "v": "x"}], schema_with(pa.int64()))
    )
    with pytest.raises(InvalidOptionError, match=message):
        compact(warehouse, full=True)
    assert read_levels(open_table(warehouse, "db.t")).snapshot_id == 1


def test_expiry_boundary_follows_java(warehouse):
    """A row is kept while now <= time + expire (RecordLevelExpire.wrap)."""
    make(warehouse, pa.int64())
    expire = RecordLevelExpire.for_table(open_table(warehouse, "db.t").table_schema, NOW)
    assert expire is not None
    batch = pa.RecordBatch.from_pylist(
        [
            {"id": 1, "t": NOW - DAY_S, "v": "at the edge"},
            {"id": 2, "t": NOW - DAY_S - 1, "v": "x"},
        ],
        schema_with(pa.int64()),
    )
    assert expire.keep(batch).tolist() == [True, False]


def test_pypaimon_rust_reads_what_expiry_left(warehouse):
    make(warehouse, pa.int64())
    rows = [{"id": i, "t": OLD if i % 2 else FRESH, "v": str(i)} for i in range(6)]
    write_with_pypaimon(
        open_table(warehouse, "db.t"), pa.Table.from_pylist(rows, schema_with(pa.int64()))
    )
    write_with_pypaimon(
        open_table(warehouse, "db.t"),
        pa.Table.from_pylist([{"id": 9, "t": FRESH, "v": "9"}], schema_with(pa.int64())),
    )
    compact(warehouse, full=True)
    ctx = SQLContext()
    ctx.register_catalog("paimon", {"warehouse": warehouse})
    got = sorted(r["id"] for b in ctx.sql("SELECT id FROM paimon.db.t") for r in b.to_pylist())
    assert got == [0, 2, 4, 9] == ids(warehouse)
