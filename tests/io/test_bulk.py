"""Many small files read in one call (io/bulk) give exactly what Arrow reads file by file."""

from __future__ import annotations

import datetime as dt

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pypaimon.schema.data_types import AtomicType
from pypaimon.schema.schema_change import SchemaChange

from dagster_paimon.errors import CorruptFileError
from dagster_paimon.io.bulk import bulk_readable, read_bulk
from dagster_paimon.io.kv import value_schema
from dagster_paimon.io.paths import data_file_path
from dagster_paimon.io.read import read_file, read_files
from dagster_paimon.partition import Partition
from dagster_paimon.snapshot.entries import live_entries
from dagster_paimon.table import open_catalog
from tests.conftest import write_with_pypaimon
from tests.maintenance.appends import append_table, events, latest

PLAIN = pa.schema(
    [
        pa.field("i8", pa.int8()),
        pa.field("i16", pa.int16()),
        pa.field("i32", pa.int32(), nullable=False),
        pa.field("i64", pa.int64()),
        pa.field("u32", pa.uint32()),
        pa.field("f32", pa.float32()),
        pa.field("f64", pa.float64()),
        pa.field("flag", pa.bool_()),
        pa.field("s", pa.string()),
        pa.field("b", pa.binary()),
        pa.field("day", pa.date32()),
        pa.field("ms", pa.timestamp("ms")),
        pa.field("us_utc", pa.timestamp("us", tz="UTC")),
    ]
)


def plain_rows(start: int, n: int) -> pa.Table:
    """Rows of every plain type, nulls, NaN, extremes and non-ASCII text among them."""
    ids = list(range(start, start + n))
    base = dt.datetime(2024, 2, 29, 23, 59, 59, 123456)
    return pa.table(
        {
            "i8": [None if i % 5 == 0 else (i % 256) - 128 for i in ids],
            "i16": [-(2**15) if i % 7 == 0 else i for i in ids],
            "i32": [i * 3 for i in ids],
            "i64": [None if i % 3 == 0 else 2**62 + i for i in ids],
            "u32": [2**32 - 1 - i for i in ids],
            "f32": [float("nan") if i % 4 == 0 else i / 8 for i in ids],
            "f64": [None if i % 6 == 0 else -i * 1e300 for i in ids],
            "flag": [None if i % 9 == 0 else i % 2 == 0 for i in ids],
            "s": [None if i % 8 == 0 else f"Zürich {i} ✓" * (i % 3) for i in ids],
            "b": [bytes([i % 256, 0, 255]) for i in ids],
            "day": [dt.date(1, 1, 1) if i % 10 == 0 else dt.date(2024, 1, 1) for i in ids],
            "ms": [base - dt.timedelta(days=i) for i in ids],
            "us_utc": [
                None
                if i % 11 == 0
                else (base + dt.timedelta(microseconds=i)).replace(tzinfo=dt.UTC)
                for i in ids
            ],
        },
        schema=PLAIN,
    )


def test_plain_types_read_in_one_call_equal_arrows_reads_of_each_file(tmp_path):
    paths = []
    for n, rows in enumerate((7, 0, 50, 1)):
        path = tmp_path / f"f{n}.parquet"
        pq.write_table(plain_rows(n * 100, rows), path, compression="zstd")
        paths.append(str(path))
    expected = pa.concat_tables(pq.read_table(p, schema=PLAIN) for p in paths)
    got = read_bulk(paths, PLAIN)
    assert got.schema == PLAIN
    assert values(got) == values(expected)


def values(table: pa.Table) -> dict[str, list]:
    """Each column's values, NaN as a marker (NaN never equals itself)."""
    return {
        name: ["NaN" if v != v else v for v in table.column(name).to_pylist()]
        for name in table.column_names
    }


@pytest.mark.parametrize(
    "kind",
    [
        pa.decimal128(10, 2),
        pa.list_(pa.int32()),
        pa.struct([pa.field("a", pa.int32())]),
        pa.map_(pa.string(), pa.int32()),
        pa.time64("us"),
        pa.timestamp("ns"),
        pa.float16(),
        pa.large_string(),
    ],
    ids=str,
)
def test_a_column_of_any_other_type_is_read_file_by_file(kind):
    assert bulk_readable(PLAIN)
    assert not bulk_readable(pa.schema([*PLAIN, pa.field("other", kind)]))


def unaware_files(tmp_path, commits: int):
    """An unpartitioned unaware-bucket append table of one 12-row file per commit, and its
    files in commit order."""
    table = append_table(str(tmp_path), "unaware", partitioned=False)
    for commit in range(commits):
        write_with_pypaimon(table, events(commit))
    files = sorted(
        (e.file for e in live_entries(table, latest(table))), key=lambda f: f.min_sequence_number
    )
    return table, files


def one_by_one(table, files, columns, deleted) -> pa.Table:
    """The files read by read_file each, in order: the reference."""
    batches = [
        b
        for f in files
        for b in read_file(
            table,
            Partition(()),
            0,
            f,
            1 << 17,
            columns=columns,
            deleted=deleted.get(f.file_name),
        )
    ]
    return pa.Table.from_batches(batches)


def test_read_files_reads_runs_of_small_files_together_and_the_others_alone(tmp_path):
    table, files = unaware_files(tmp_path, 6)
    assert [f.row_count for f in files] == [12] * 6
    columns = value_schema(table.table_schema).names
    deleted = {files[3].file_name: np.array([0, 5], dtype=np.int64)}
    batches = list(read_files(table, Partition(()), 0, files, 30, columns=columns, deleted=deleted))
    # files 0-2 in one call (36 rows >= 30), file 3 alone (a vector marks 2 rows), 4-5 together
    assert [b.num_rows for b in batches] == [36, 10, 24]
    got = pa.Table.from_batches(batches)
    assert got.equals(one_by_one(table, files, columns, deleted))
    assert got.num_rows == 70


def test_files_of_an_older_schema_and_larger_files_are_read_alone(tmp_path):
    table, files = unaware_files(tmp_path, 2)
    catalog = open_catalog(str(tmp_path))
    catalog.alter_table("db.events", [SchemaChange.add_column("extra", AtomicType("INT"))])
    table = catalog.get_table("db.events")
    write_with_pypaimon(table, events(2).append_column("extra", pa.array([7] * 12, pa.int32())))
    files = sorted(
        (e.file for e in live_entries(table, latest(table))), key=lambda f: f.min_sequence_number
    )
    columns = value_schema(table.table_schema).names
    # the two old-schema files alone (together they would be one batch of 24), then the new
    batches = list(read_files(table, Partition(()), 0, files, 20, columns=columns, deleted={}))
    assert [b.num_rows for b in batches] == [12, 12, 12]
    got = pa.Table.from_batches(batches)
    assert got.equals(one_by_one(table, files, columns, {}))
    assert got.column("extra").to_pylist() == [None] * 24 + [7] * 12
    # a file of more rows than a batch streams alone, in batches
    batches = list(read_files(table, Partition(()), 0, files[2:], 10, columns=columns, deleted={}))
    assert [b.num_rows for b in batches] == [10, 2]


def test_a_corrupt_file_among_many_is_named(tmp_path):
    table, files = unaware_files(tmp_path, 3)
    broken = data_file_path(table, Partition(()), 0, files[1])
    with open(broken, "r+b") as f:
        f.truncate(40)
    columns = value_schema(table.table_schema).names
    with pytest.raises(CorruptFileError, match=files[1].file_name):
        list(read_files(table, Partition(()), 0, files, 100, columns=columns, deleted={}))
