"""The vectorized bucket function against pypaimon's row-at-a-time BinaryRow hash."""

from __future__ import annotations

import datetime
import decimal
import random

import numpy as np
import pyarrow as pa
import pytest
from pypaimon.schema.data_types import AtomicType, DataField
from pypaimon.write.row_key_extractor import RowKeyExtractor, _bucket_from_hash

from dagster_paimon.errors import InvalidOptionError
from dagster_paimon.lsm.write.bucket import binary_row_hashes, buckets_of, fixed_bucket_count
from dagster_paimon.table import TableSpec, create_table
from tests.conftest import ORDERS_SCHEMA

ROWS = 200
rng = random.Random(5)


def _text(longest: int) -> str:
    return "".join(rng.choice("ab\u00e9\u6f22x09") for _ in range(rng.randrange(longest)))


def _micros(low: int, high: int) -> datetime.datetime:
    return datetime.datetime(2000, 1, 1) + datetime.timedelta(microseconds=rng.randrange(low, high))


# name -> (arrow type, Paimon type, value generator)
COLUMNS = {
    "bool": (pa.bool_(), "BOOLEAN", lambda: rng.random() < 0.5),
    "tinyint": (pa.int8(), "TINYINT", lambda: rng.randrange(-128, 128)),
    "smallint": (pa.int16(), "SMALLINT", lambda: rng.randrange(-(2**15), 2**15)),
    "int": (pa.int32(), "INT", lambda: rng.randrange(-(2**31), 2**31)),
    "bigint": (pa.int64(), "BIGINT", lambda: rng.randrange(-(2**63), 2**63)),
    "float": (pa.float32(), "FLOAT", lambda: rng.uniform(-1e6, 1e6)),
    "double": (pa.float64(), "DOUBLE", lambda: rng.uniform(-1e12, 1e12)),
    "string": (pa.string(), "STRING", lambda: _text(40)),
    "bytes": (pa.binary(), "BYTES", lambda: rng.randbytes(rng.randrange(20))),
    "date": (
        pa.date32(),
        "DATE",
        lambda: datetime.date(1970, 1, 1) + datetime.timedelta(days=rng.randrange(-9000, 9000)),
    ),
    "time": (
        pa.time32("ms"),
        "TIME(0)",
        lambda: datetime.time(rng.randrange(24), rng.randrange(60), 0, rng.randrange(1000) * 1000),
    ),
    "decimal": (
        pa.decimal128(15, 2),
        "DECIMAL(15, 2)",
        lambda: decimal.Decimal(rng.randrange(-(10**13), 10**13)) / 100,
    ),
    "wide_decimal": (
        pa.decimal128(38, 4),
        "DECIMAL(38, 4)",
        lambda: (
            decimal.Decimal(rng.choice([rng.randrange(-(10**33), 10**33), 0, 255, -77])) / 10000
        ),
    ),
    "timestamp3": (pa.timestamp("ms"), "TIMESTAMP(3)", lambda: _micros(-(10**15), 10**15)),
    "timestamp6": (pa.timestamp("us"), "TIMESTAMP(6)", lambda: _micros(-(10**15), 10**15)),
    "timestamp_ltz": (
        pa.timestamp("us", tz="UTC"),
        "TIMESTAMP(6) WITH LOCAL TIME ZONE",
        lambda: _micros(0, 10**15).replace(tzinfo=datetime.UTC),
    ),
}


def pypaimon_hashes(values: list[tuple], fields: list[DataField]) -> list[int]:
    """pypaimon's BinaryRow hash of each row, as a signed Java int."""
    hashes = [RowKeyExtractor._binary_row_hash_code(v, fields) for v in values]
    return [h - 2**32 if h >= 2**31 else h for h in hashes]


def column_values(name: str, null_share: float = 0.1) -> list:
    generate = COLUMNS[name][2]
    return [None if rng.random() < null_share else generate() for _ in range(ROWS)]


@pytest.mark.parametrize("name", sorted(COLUMNS))
def test_each_type_hashes_exactly_as_pypaimon(name):
    arrow_type, paimon_type, _ = COLUMNS[name]
    values = column_values(name)
    ours = binary_row_hashes([pa.array(values, arrow_type)])
    field = DataField(0, name, AtomicType(paimon_type))
    assert ours.tolist() == pypaimon_hashes([(v,) for v in values], [field])


def test_a_key_of_every_type_at_once_hashes_exactly_as_pypaimon():
    names = sorted(COLUMNS)
    columns = {n: column_values(n) for n in names}
    fields = [DataField(i, n, AtomicType(COLUMNS[n][1])) for i, n in enumerate(names)]
    ours = binary_row_hashes([pa.array(columns[n], COLUMNS[n][0]) for n in names])
    rows = list(zip(*(columns[n] for n in names), strict=True))
    assert ours.tolist() == pypaimon_hashes(rows, fields)


def test_strings_around_the_inline_limit_and_sliced_arrays():
    values = ["", "a", "abcdefg", "abcdefgh", "\u00e9" * 4, "x" * 100, None] * 5
    array = pa.array(values).slice(3, 25)
    field = DataField(0, "s", AtomicType("STRING"))
    expected = pypaimon_hashes([(v,) for v in values[3:28]], [field])
    assert binary_row_hashes([array]).tolist() == expected
    chunked = pa.chunked_array([pa.array(values[:10]), pa.array(values[10:])])
    assert binary_row_hashes([chunked]).tolist() == pypaimon_hashes([(v,) for v in values], [field])


def test_wide_decimals_use_javas_minimal_two_complement_bytes():
    # BigInteger.toByteArray() of -128 is one byte (0x80); pypaimon writes two (0xFF80).
    # Every other value matches pypaimon; this one follows Java, the format's reference.
    values = [decimal.Decimal(-128), decimal.Decimal(-129), decimal.Decimal(127)]
    field = DataField(0, "d", AtomicType("DECIMAL(38, 0)"))
    ours = binary_row_hashes([pa.array(values, pa.decimal128(38, 0))]).tolist()
    reference = pypaimon_hashes([(v,) for v in values], [field])
    assert ours[1:] == reference[1:]
    assert ours[0] != reference[0]


def test_buckets_follow_javas_truncated_remainder():
    hashes = np.array([-7, -1, 0, 1, 7, -(2**31), 2**31 - 1], dtype=np.int32)
    expected = [_bucket_from_hash(int(h) % 2**32, 3) for h in hashes]
    assert buckets_of(hashes, 3).tolist() == expected


def test_empty_input_has_no_buckets():
    assert binary_row_hashes([pa.array([], pa.int64())]).tolist() == []


@pytest.mark.parametrize(
    ("bucket", "options", "message"),
    [
        (-1, {}, "'bucket' is -1"),
        (-2, {}, "'bucket' is -2"),
        (2, {"bucket-function.type": "mod"}, "bucket-function.type"),
        (2, {"bucket-function.type": "hive"}, "bucket-function.type"),
    ],
)
def test_tables_without_a_pure_hash_bucket_are_refused(warehouse, bucket, options, message):
    spec = TableSpec("db", "t", ORDERS_SCHEMA, ("dt", "id"), bucket, ("dt",), options)
    table = create_table(warehouse, spec)
    with pytest.raises(InvalidOptionError, match=message):
        fixed_bucket_count(table.table_schema)
