"""ORC files written by pyarrow's own writer through open_writer: read back as written.

A table of every type pyarrow writes to ORC (nulls everywhere, a struct with null rows) is fed in
sliced batches, as compaction feeds them: pyarrow's ORC writer writes a sliced struct column from
its start, so the writer copies such columns first. Paimon's bundled Java ORC reader reads every
row of our files and seeks to every row group and to rows inside them (decimal columns of every
width, nulls in runs, each codec).
"""

from __future__ import annotations

import io
import random
from datetime import date, datetime
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pyarrow.orc as orc
import pytest

from dagster_paimon.io.formats import ORC, open_writer

ROWS = 12_000
CODECS = ["zstd", "none", "snappy", "lz4", "zlib"]
JAVA_ROWS = 60_000  # six row groups of ORC's 10,000 rows
LARGEST = 10**18 - 1  # DECIMAL(18)'s largest unscaled value


def every_type(seed: int) -> pa.Table:
    """Rows of every ORC-writable type, a tenth of each column null."""
    rng = random.Random(seed)

    def column(make, arrow_type):
        return pa.array([None if rng.random() < 0.1 else make() for _ in range(ROWS)], arrow_type)

    point = pa.struct([("x", pa.int64()), ("y", pa.string())])
    return pa.table(
        {
            "flag": column(lambda: rng.random() < 0.5, pa.bool_()),
            "tiny": column(lambda: rng.randint(-128, 127), pa.int8()),
            "big": column(lambda: rng.randint(2**61, 2**62), pa.int64()),
            "f32": column(lambda: rng.random(), pa.float32()),
            "f64": column(lambda: rng.random() * 1e6, pa.float64()),
            "s": column(lambda: "x" * rng.randint(0, 20) + str(rng.random()), pa.string()),
            "raw": column(lambda: b"y" * rng.randint(0, 9), pa.binary()),
            "dec": column(
                lambda: Decimal(rng.randint(-(10**9), 10**9)) / 100, pa.decimal128(12, 2)
            ),
            "wide": column(
                lambda: Decimal(rng.randint(-(10**30), 10**30)) / 10**10, pa.decimal128(38, 10)
            ),
            "round": column(lambda: Decimal(rng.randint(0, 9) * 100), pa.decimal128(10, 0)),
            "day": column(lambda: date(2000 + rng.randint(0, 30), 1, 1), pa.date32()),
            "ts": column(
                lambda: datetime(2020, 1, 1, 0, 0, rng.randint(0, 59), rng.randint(0, 999999)),
                pa.timestamp("us"),
            ),
            "nanos": column(lambda: rng.randint(0, 10**18), pa.timestamp("ns")),
            "ltz": column(lambda: rng.randint(0, 10**15), pa.timestamp("us", tz="UTC")),
            "ints": column(lambda: [rng.randint(0, 9)] * rng.randint(0, 4), pa.list_(pa.int32())),
            "point": column(lambda: {"x": rng.randint(0, 5), "y": "a"}, point),
            "scores": column(lambda: [("k", 1.5)], pa.map_(pa.string(), pa.float64())),
        }
    )


def written(table: pa.Table, compression: str, batch_rows: int = 1500) -> bytes:
    """The table written by open_writer in sliced batches."""
    sink = io.BytesIO()
    writer = open_writer(sink, table.schema, ORC, compression, {})
    for batch in table.to_batches(max_chunksize=batch_rows):
        writer.write_batch(batch)
    writer.close()
    return sink.getvalue()


@pytest.mark.parametrize("compression", CODECS)
def test_sliced_batches_read_back_as_written(compression):
    table = every_type(seed=1)
    assert any(b.column("point").offset for b in table.to_batches(max_chunksize=1500))
    read = orc.ORCFile(io.BytesIO(written(table, compression)))
    assert read.nrows == ROWS
    back = read.read()  # timestamps come back as nanoseconds
    assert back.equals(table.cast(back.schema))


def test_a_file_without_rows_keeps_its_schema():
    schema = every_type(seed=2).schema
    sink = io.BytesIO()
    open_writer(sink, schema, ORC, "zstd", {}).close()
    read = orc.ORCFile(io.BytesIO(sink.getvalue()))
    assert read.nrows == 0
    assert read.schema.names == schema.names


def decimals(unscaled: np.ndarray, null: np.ndarray, precision: int, scale: int) -> pa.Array:
    """A decimal128 array from unscaled int64 values and a null mask."""
    words = np.empty(2 * len(unscaled), dtype=np.int64)
    words[0::2], words[1::2] = unscaled, unscaled >> 63
    validity = pa.array(~null).buffers()[1] if null.any() else None
    return pa.Array.from_buffers(
        pa.decimal128(precision, scale), len(unscaled), [validity, pa.py_buffer(words)]
    )


def decimal_table() -> pa.Table:
    """Keys and decimal columns: wide values with nulls and both extremes, small values without
    nulls, one in long null runs, and one wider than 18 digits."""
    rng = np.random.default_rng(7)
    wide = rng.integers(-LARGEST, LARGEST, JAVA_ROWS, endpoint=True)
    wide[[0, 17, JAVA_ROWS - 1]] = [LARGEST, -LARGEST, 0]
    small = rng.integers(0, 10, JAVA_ROWS)
    runs = np.arange(JAVA_ROWS) * 37 - 10**6
    rows = np.arange(JAVA_ROWS)
    return pa.table(
        {
            "k": pa.array(rows),
            "wide": decimals(wide, rng.random(JAVA_ROWS) < 0.3, 18, 4),
            "small": decimals(small, np.zeros(JAVA_ROWS, bool), 4, 2),
            "runs": decimals(runs, (rows < 30_000) | (rows % 7000 < 3000), 9, 0),
            "huge": decimals(wide, rng.random(JAVA_ROWS) < 0.1, 38, 10),
        }
    )


def as_values(row: list) -> list:
    """A Java row's text as the key's int and each decimal's Decimal."""
    return [int(row[0]), *(None if v is None else Decimal(v) for v in row[1:])]


@pytest.mark.parametrize("compression", CODECS)
def test_java_reads_and_seeks_every_row_group(paimon_java, tmp_path, compression):
    data = decimal_table()
    path = tmp_path / "file.orc"
    path.write_bytes(written(data, compression, batch_rows=8192))
    assert orc.ORCFile(str(path)).read().equals(data)
    groups = list(range(0, JAVA_ROWS, 10_000))
    inside = [g + d for g in groups for d in (1, 4321, 9999)]
    rows, sought = paimon_java.orc_rows(str(path), groups + inside)
    columns = [c.to_pylist() for c in data.columns]
    expected = [list(row) for row in zip(*columns, strict=True)]
    assert [as_values(r) for r in rows] == expected
    assert {n: as_values(r) for n, r in sought.items()} == {n: expected[n] for n in groups + inside}
