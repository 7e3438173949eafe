"""The level-0 writer and write-schema rules (no Spark); pypaimon reads the tables."""

from __future__ import annotations

import datetime
from itertools import pairwise

import pyarrow as pa
import pytest

from dagster_paimon.errors import SchemaMismatchError
from dagster_paimon.ingest.commit import commit_ingest
from dagster_paimon.lsm.model.levels import read_levels
from dagster_paimon.lsm.write.layout import compatible, plan_write_layout
from dagster_paimon.lsm.write.level0 import Level0Writer, max_sequences
from dagster_paimon.table import TableSpec, create_table
from tests.conftest import ORDERS_SCHEMA, orders_spec
from tests.lsm.kvmodel import read_rows, sorted_rows

KEY = ("dt", "id")
WITH_KIND = ORDERS_SCHEMA.append(pa.field("_row_kind", pa.string()))


def batch(rows: list[tuple]) -> pa.RecordBatch:
    columns = list(zip(*rows, strict=True))
    return pa.RecordBatch.from_arrays(
        [pa.array(c, f.type) for c, f in zip(columns, WITH_KIND, strict=True)], schema=WITH_KIND
    )


def write(table, batches, **kwargs) -> list:
    writer = Level0Writer(table, plan_write_layout(table.table_schema, WITH_KIND), {}, **kwargs)
    for b in batches:
        writer.write(b)
    writes = writer.finish()
    commit_ingest(table, writes, overwrite=None, commit_user="test", identifier=1)
    return writes


def test_small_write_buffers_flush_several_files_with_rising_sequences(warehouse):
    table = create_table(warehouse, orders_spec(bucket=1))
    batches = [
        batch([("2024-01-01", i % 5, f"b{n}-{i}", "+I") for i in range(10)]) for n in range(6)
    ]

    writes = write(table, batches, buffer_bytes=1)

    files = sorted(writes[0].files, key=lambda f: f.min_sequence_number)
    assert len(files) == 6
    for older, newer in pairwise(files):
        assert newer.min_sequence_number > older.max_sequence_number
    assert all(f.row_count == 5 for f in files)
    assert sorted_rows(read_rows(table), KEY) == [
        {"dt": "2024-01-01", "id": i, "v": f"b5-{i + 5}"} for i in range(5)
    ]


def test_ignore_delete_drops_retractions_before_writing(warehouse):
    table = create_table(warehouse, orders_spec(bucket=1, **{"ignore-delete": "true"}))
    rows = [
        ("2024-01-01", 1, "a", "+I"),
        ("2024-01-01", 1, None, "-D"),
        ("2024-01-01", 2, "b", "-U"),
    ]

    write(table, [batch(rows)])

    assert read_rows(table) == [{"dt": "2024-01-01", "id": 1, "v": "a"}]
    files = [f for b in read_levels(table).buckets for f in b.levels.all_files()]
    assert sum(f.delete_row_count for f in files) == 0


def test_every_schema_problem_is_reported_at_once(warehouse):
    table = create_table(warehouse, orders_spec())
    source = pa.schema([("id", pa.string()), ("extra", pa.int8()), ("_row_kind", pa.int32())])

    with pytest.raises(SchemaMismatchError) as error:
        plan_write_layout(table.table_schema, source)

    message = str(error.value)
    for part in ("missing columns ['dt', 'v']", "['extra'] are not in the table", "'id' is string"):
        assert part in message
    assert "'_row_kind' must be a string column" in message


@pytest.mark.parametrize(
    ("source", "target", "ok"),
    [
        (pa.int32(), pa.int64(), True),
        (pa.int64(), pa.int32(), False),
        (pa.int32(), pa.decimal128(12, 2), True),
        (pa.int64(), pa.decimal128(12, 2), False),
        (pa.decimal128(10, 2), pa.decimal128(12, 3), True),
        (pa.decimal128(10, 2), pa.decimal128(12, 1), False),
        (pa.float32(), pa.float64(), True),
        (pa.float64(), pa.float32(), False),
        (pa.large_string(), pa.string(), True),
        (pa.timestamp("us"), pa.timestamp("ms"), True),
        (pa.timestamp("us", tz="UTC"), pa.timestamp("us"), False),
        (pa.list_(pa.int32()), pa.list_(pa.int64()), True),
        (pa.null(), pa.string(), True),
        (pa.string(), pa.binary(), False),
    ],
)
def test_type_compatibility(source, target, ok):
    assert compatible(source, target) is ok


def test_a_batch_of_only_ignored_rows_writes_nothing(warehouse):
    table = create_table(warehouse, orders_spec(bucket=1, **{"ignore-delete": "true"}))
    writer = Level0Writer(table, plan_write_layout(table.table_schema, WITH_KIND), {})
    writer.write(batch([("2024-01-01", 1, None, "-D")]))
    assert writer.finish() == []
    assert writer.partitions == set()


DATED = pa.schema(
    [
        pa.field("day", pa.date32(), nullable=False),
        pa.field("id", pa.int64(), nullable=False),
        pa.field("v", pa.string()),
    ]
)


def test_typed_partitions_find_their_buckets_sequences_again(warehouse):
    spec = TableSpec("db", "dated", DATED, ("day", "id"), 2, ("day",))
    table = create_table(warehouse, spec)
    layout = plan_write_layout(table.table_schema, DATED)
    day = datetime.date(2024, 3, 1)
    for round_ in range(2):
        data = pa.RecordBatch.from_pylist(
            [{"day": day, "id": i, "v": f"r{round_}"} for i in range(20)], schema=DATED
        )
        writer = Level0Writer(table, layout, max_sequences(read_levels(table)))
        writer.write(data)
        commit_ingest(table, writer.finish(), overwrite=None, commit_user="t", identifier=round_)

    assert {r["v"] for r in read_rows(table)} == {"r1"}
    for bucket in read_levels(table).buckets:
        first, second = sorted(bucket.levels.level0, key=lambda f: f.min_sequence_number)
        assert second.min_sequence_number == first.max_sequence_number + 1
