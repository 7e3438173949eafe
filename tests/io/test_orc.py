"""ORC files written a stripe per thread: read back as one writer's file, with its statistics.

A table of every type pyarrow writes to ORC (nulls everywhere, sliced batches, a struct with
null rows) is written in many stripes by StripedOrcWriter and, whole, by one pyarrow ORCWriter.
Both read back equal, and the stitched file's statistics, parsed from its tail, equal the
single writer's column for column: ORC's C++ writer computes them over all rows at once, so
they check our merge of the stripes' statistics independently (a double's sum aside: it
depends on where stripes end, by a last bit). Lists and maps are checked against their stripes'
statistics instead: ORC C++ 2.0 leaves a batch without nulls out of a collection's statistics,
so a writer's totals depend on how its rows were batched.
"""

from __future__ import annotations

import io
import random
from datetime import date, datetime
from decimal import Decimal

import pyarrow as pa
import pyarrow.orc as orc
import pytest

from dagster_paimon.io.orc.proto import as_double, decode
from dagster_paimon.io.orc.stats import DOUBLE, FLOAT, LIST, MAP, TYPE_KIND, decimal_text
from dagster_paimon.io.orc.tail import FOOTER_STATISTICS, FOOTER_TYPES, read_tail
from dagster_paimon.io.orc.writer import StripedOrcWriter

ROWS = 12_000


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
            "big": column(lambda: rng.randint(2**61, 2**62), pa.int64()),  # its sum overflows
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


def one_writer(table: pa.Table, compression: str) -> bytes:
    """The table written whole by one pyarrow ORC writer."""
    sink = io.BytesIO()
    writer = orc.ORCWriter(sink, compression=compression, compression_strategy="speed")
    writer.write(table)
    writer.close()
    return sink.getvalue()


def stitched(table: pa.Table, compression: str, stripe_bytes: int) -> bytes:
    """The table written in sliced batches by StripedOrcWriter."""
    sink = io.BytesIO()
    writer = StripedOrcWriter(sink, table.schema, compression, stripe_bytes=stripe_bytes)
    for batch in table.to_batches(max_chunksize=1500):
        writer.write_batch(batch)
    writer.close()
    return sink.getvalue()


def decoded(stats: bytes) -> dict:
    """A ColumnStatistics by field number, its typed sub-message decoded."""
    return {n: (decode(v) if n not in (1, 10) else v) for n, _, v in decode(stats)}


def statistics(data: bytes) -> list[dict]:
    """Each column's file statistics from the tail."""
    return [decoded(s) for s in read_tail(memoryview(data)).repeated(FOOTER_STATISTICS)]


def stripe_statistics(data: bytes) -> list[list[dict]]:
    """Each stripe's column statistics."""
    stripes = read_tail(memoryview(data)).stripe_statistics
    return [[decoded(c) for _, _, c in decode(stripe)] for stripe in stripes]


def folded_children(stripes: list[dict]) -> list:
    """CollectionStatistics of stripes folded: least minimum, greatest maximum, total sum."""
    fields = [dict((n, v) for n, _, v in s[12]) for s in stripes]
    bounded = [f for f in fields if 1 in f]
    return [
        (1, 0, min(f[1] for f in bounded)),
        (2, 0, max(f[2] for f in bounded)),
        (3, 0, sum(f[3] for f in fields)),
    ]


def kinds(data: bytes) -> list[int]:
    """Each column's ORC type kind."""
    types = read_tail(memoryview(data)).repeated(FOOTER_TYPES)
    return [dict((n, v) for n, _, v in decode(t)).get(TYPE_KIND, 0) for t in types]


@pytest.mark.parametrize("compression", ["zstd", "uncompressed", "snappy", "lz4", "zlib"])
def test_stitched_stripes_read_back_with_one_writers_statistics(compression):
    table = every_type(seed=1)
    ours = stitched(table, compression, stripe_bytes=64 * 1024)
    theirs = one_writer(table, compression)
    read = orc.ORCFile(io.BytesIO(ours))
    assert read.nstripes > 10
    assert read.nrows == ROWS
    assert read.read().equals(orc.ORCFile(io.BytesIO(theirs)).read())
    assert len(read_tail(memoryview(ours)).stripe_statistics) == read.nstripes

    column_kinds = kinds(theirs)
    stripes = stripe_statistics(ours)
    for column, (kind, mine, one) in enumerate(
        zip(column_kinds, statistics(ours), statistics(theirs), strict=True)
    ):
        if kind in (LIST, MAP):
            assert mine == {**one, 12: folded_children([s[column] for s in stripes])}
            continue
        if kind in (FLOAT, DOUBLE):
            (sub_number,) = set(mine) - {1, 10}
            sums = [dict((n, v) for n, _, v in s[sub_number]).pop(3) for s in (mine, one)]
            assert as_double(sums[0]) == pytest.approx(as_double(sums[1]), rel=1e-12)
            for s in (mine, one):
                s[sub_number] = [f for f in s[sub_number] if f[0] != 3]
        assert mine == one
    big = statistics(ours)[3]
    assert 3 not in dict((n, v) for n, _, v in big[2])  # no sum: it overflowed int64


def test_a_file_without_rows_keeps_its_schema():
    schema = every_type(seed=2).schema
    sink = io.BytesIO()
    StripedOrcWriter(sink, schema, "zstd").close()
    read = orc.ORCFile(io.BytesIO(sink.getvalue()))
    assert read.nrows == 0
    assert read.schema.names == schema.names


@pytest.mark.parametrize(
    ("unscaled", "scale", "text"),
    [
        (0, 2, "0"),
        (1250, 2, "12.5"),
        (1200, 2, "12"),
        (-5, 2, "-0.05"),
        (-50, 2, "-0.5"),
        (100, 0, "100"),
        (7, 3, "0.007"),
    ],
)
def test_decimal_text_is_orcs_trimmed_text(unscaled, scale, text):
    assert decimal_text(unscaled, scale) == text
