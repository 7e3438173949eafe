"""Buckets computed in the JVM equal the numpy port of Paimon's bucket function, row for row."""

from __future__ import annotations

import datetime
import decimal
import random

import numpy as np
import pyarrow as pa
import pytest
from pyspark.sql import functions as F

from dagster_paimon.lsm.write.bucket import binary_row_hashes, buckets_of
from dagster_paimon.spark.binary_row import with_bucket_column

pytestmark = pytest.mark.spark

ROWS = 400
BUCKETS = 7
TEXT = ["", "a", "ab", "seven!!", "eight!!!", "é", "ünïcödé text", "x" * 8, "y" * 9, "z" * 40]


def value(t: pa.DataType, rng: random.Random) -> object:
    """An edge or random value of a type."""
    if pa.types.is_boolean(t):
        return rng.random() < 0.5
    if pa.types.is_integer(t):
        bits = t.bit_width - 1
        return rng.choice(
            [0, 1, -1, (1 << bits) - 1, -(1 << bits), rng.randint(-(1 << bits), (1 << bits) - 1)]
        )
    if pa.types.is_date32(t):
        return datetime.date(1900, 1, 1) + datetime.timedelta(rng.randint(0, 80000))
    if pa.types.is_decimal(t):
        unscaled = rng.randint(-(10**t.precision) + 1, 10**t.precision - 1)
        return decimal.Decimal(unscaled).scaleb(-t.scale)
    if pa.types.is_string(t):
        return rng.choice([*TEXT, "".join(rng.choices("abc€", k=rng.randint(0, 30)))])
    return rng.choice(TEXT).encode() + bytes([rng.randint(0, 255)])


def values(t: pa.DataType, rng: random.Random) -> list:
    """Values of a type, a tenth of them null."""
    return [None if rng.random() < 0.1 else value(t, rng) for _ in range(ROWS)]


KEYS = {
    "tinyint": [pa.int8()],
    "smallint": [pa.int16()],
    "int": [pa.int32()],
    "bigint": [pa.int64()],
    "boolean": [pa.bool_()],
    "date": [pa.date32()],
    "decimal(18,4)": [pa.decimal128(18, 4)],
    "decimal(7,0)": [pa.decimal128(7, 0)],
    "bigint, int, date, boolean, decimal(18,4), smallint, tinyint": [
        pa.int64(),
        pa.int32(),
        pa.date32(),
        pa.bool_(),
        pa.decimal128(18, 4),
        pa.int16(),
        pa.int8(),
    ],
    "string": [pa.string()],
    "binary": [pa.binary()],
    "string, bigint, string": [pa.string(), pa.int64(), pa.string()],
    "int, date, binary, decimal(10,2), string": [
        pa.int32(),
        pa.date32(),
        pa.binary(),
        pa.decimal128(10, 2),
        pa.string(),
    ],
}


@pytest.mark.parametrize("name", list(KEYS))
def test_jvm_buckets_equal_the_numpy_bucket_function(spark, name):
    rng = random.Random(name)
    types = KEYS[name]
    table = pa.table({f"k{i}": pa.array(values(t, rng), t) for i, t in enumerate(types)})
    keys = [F.col(c) for c in table.column_names]
    frame = with_bucket_column(spark.createDataFrame(table), "b", keys, types, BUCKETS)
    assert frame is not None
    got = np.array([r.b for r in frame.collect()])
    want = buckets_of(binary_row_hashes(table.columns), BUCKETS)
    assert (got == want).all(), np.flatnonzero(got != want)[:5]


def test_narrower_input_columns_are_bucketed_in_the_table_type(spark):
    narrow = pa.table({"k": pa.array([1, -2, None, 2**31 - 1], pa.int32())})
    frame = with_bucket_column(
        spark.createDataFrame(narrow), "b", [F.col("k")], [pa.int64()], BUCKETS
    )
    assert frame is not None and frame.columns == ["k", "b"]
    got = [r.b for r in frame.collect()]
    wide = narrow.column("k").cast(pa.int64())
    assert got == buckets_of(binary_row_hashes([wide]), BUCKETS).tolist()


@pytest.mark.parametrize(
    "t", [pa.timestamp("us"), pa.timestamp("ms"), pa.float64(), pa.decimal128(20, 2)]
)
def test_other_key_types_are_left_to_the_arrow_udf(spark, t):
    frame = spark.createDataFrame(pa.table({"k": pa.array([None], t)}))
    assert with_bucket_column(frame, "b", [F.col("k")], [t], BUCKETS) is None
