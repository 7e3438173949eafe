"""DECIMAL(p<=18) columns we encode into ORC stripes: read, sought and summarised as ORC C++ does.

StripedOrcWriter has pyarrow write a placeholder where each such column goes and splices in our
encoding. Paimon's bundled Java ORC reader reads every row and seeks to every row group (a seek
positions each stream from our row index) and to rows inside them; pyarrow reads the file
back. Stripe by stripe, the same rows written by pyarrow alone (ORC C++) give the proof of the
rest: the same types, encodings, row-index and stripe statistics, the same DATA bytes, and,
uncompressed, the same DATA positions.

The splice runs in these tests whichever pyarrow is installed: run under another pyarrow
release, they say whether it may join SPLICE_PROVEN_PYARROW; the locked release must be in it.
"""

from __future__ import annotations

import io
import tomllib
from decimal import Decimal
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.orc as orc
import pytest

from dagster_paimon.io.orc import writer as orc_writer
from dagster_paimon.io.orc.codecs import NONE, Codec
from dagster_paimon.io.orc.proto import decode, packed
from dagster_paimon.io.orc.tail import FOOTER_STATISTICS, FOOTER_STRIPES, FOOTER_TYPES, read_tail
from tests.io.test_orc import stitched

CODECS = ["zstd", "uncompressed", "snappy", "lz4", "zlib"]
ROWS = 60_000
STRIPE_BYTES = 1536 * 1024  # about 27,000 rows: three stripes of three row groups each
LARGEST = 10**18 - 1  # DECIMAL(18)'s largest unscaled value


LOCK = Path(__file__).resolve().parents[3] / "uv.lock"


@pytest.fixture(autouse=True)
def spliced_on_any_pyarrow(monkeypatch):
    """The splice runs whether or not the installed pyarrow is proven: these tests prove it."""
    monkeypatch.setattr(orc_writer, "splice_proven", lambda version=None: True)


def test_the_locked_pyarrow_is_proven():
    """Locking another pyarrow asks for these tests to be run under it first."""
    packages = tomllib.loads(LOCK.read_text())["package"]
    (locked,) = [p["version"] for p in packages if p["name"] == "pyarrow"]
    assert locked in orc_writer.SPLICE_PROVEN_PYARROW


def test_unproven_pyarrow_writes_no_spliced_decimals(monkeypatch):
    schema = table().schema
    assert [d.field for d in orc_writer.spliced_decimals(schema)] == [1, 2, 3]
    monkeypatch.setattr(orc_writer, "splice_proven", lambda version=None: False)
    assert orc_writer.spliced_decimals(schema) == []
    monkeypatch.undo()
    assert orc_writer.splice_proven("19.0.1") and not orc_writer.splice_proven("20.0.0")


def decimals(unscaled: np.ndarray, null: np.ndarray, precision: int, scale: int) -> pa.Array:
    """A decimal128 array from unscaled int64 values and a null mask."""
    words = np.empty(2 * len(unscaled), dtype=np.int64)
    words[0::2], words[1::2] = unscaled, unscaled >> 63
    validity = pa.array(~null).buffers()[1] if null.any() else None
    return pa.Array.from_buffers(
        pa.decimal128(precision, scale), len(unscaled), [validity, pa.py_buffer(words)]
    )


def table() -> pa.Table:
    """Keys and decimal columns: wide values with nulls and both extremes, small values without
    nulls, and one null in long runs (all of the first stripe)."""
    rng = np.random.default_rng(7)
    wide = rng.integers(-LARGEST, LARGEST, ROWS, endpoint=True)
    wide[[0, 17, ROWS - 1]] = [LARGEST, -LARGEST, 0]
    small = rng.integers(0, 10, ROWS)
    runs = np.arange(ROWS) * 37 - 10**6
    return pa.table(
        {
            "k": pa.array(np.arange(ROWS)),
            "wide": decimals(wide, rng.random(ROWS) < 0.3, 18, 4),
            "small": decimals(small, np.zeros(ROWS, bool), 4, 2),
            "runs": decimals(
                runs, (np.arange(ROWS) < 30_000) | (np.arange(ROWS) % 7000 < 3000), 9, 0
            ),
        }
    )


def written(data: pa.Table, compression: str) -> bytes:
    """The table written by StripedOrcWriter in sliced batches, stripes of STRIPE_BYTES."""
    return stitched(data, compression, STRIPE_BYTES)


def stripes(data: bytes) -> list[dict]:
    """Each stripe's rows, encodings and, by column, its streams' bytes and row-index entries."""
    view = memoryview(data)
    tail = read_tail(view)
    out = []
    for info_bytes in tail.repeated(FOOTER_STRIPES):
        info = {n: v for n, _, v in decode(info_bytes)}
        start, index, body, footer_length = info[1], info[2], info[3], info[4]
        footer = decode(tail.codec.decompress(view[start + index + body :][:footer_length]))
        streams: dict[tuple[int, int], bytes] = {}
        pos = start
        for _, _, value in (f for f in footer if f[0] == 1):
            stream = {n: v for n, _, v in decode(value)}
            length = stream.get(3, 0)
            raw = tail.codec.decompress(view[pos : pos + length])
            streams[(stream.get(2, 0), stream.get(1, 0))] = bytes(raw)
            pos += length
        entries = {
            column: [
                {n: v for n, _, v in decode(entry)} for _, _, entry in decode(streams[(column, 6)])
            ]
            for column, kind in streams
            if kind == 6
        }
        out.append(
            {
                "rows": info[5],
                "encodings": [decode(v) for n, _, v in footer if n == 2],
                "streams": streams,
                "row_index": entries,
            }
        )
    return out


def decimal_columns(data: pa.Table) -> list[int]:
    """ORC column ids of the table's decimal columns (top-level: id = field index + 1)."""
    return [i + 1 for i, f in enumerate(data.schema) if pa.types.is_decimal(f.type)]


def expected_text(data: pa.Table) -> list[list]:
    """Each row as Decimal (None for null) per column, keys as ints."""
    columns = [c.to_pylist() for c in data.columns]
    return [list(row) for row in zip(*columns, strict=True)]


def as_values(row: list) -> list:
    """A Java row's text as the key's int and each decimal's Decimal."""
    return [int(row[0]), *(None if v is None else Decimal(v) for v in row[1:])]


@pytest.mark.parametrize("compression", CODECS)
def test_java_reads_and_seeks_every_row_group(paimon_java, tmp_path, compression):
    data = table()
    path = tmp_path / "file.orc"
    path.write_bytes(written(data, compression))
    file = orc.ORCFile(str(path))
    assert file.nstripes == 3
    assert file.read().equals(data)
    starts = np.cumsum([0, *(s["rows"] for s in stripes(path.read_bytes()))])[:-1]
    groups = [int(s + g) for s in starts for g in range(0, 30_000, 10_000) if s + g < ROWS]
    inside = [g + d for g in groups for d in (1, 4321, 9999) if g + d < ROWS]
    rows, sought = paimon_java.orc_rows(str(path), groups + inside)
    expected = expected_text(data)
    assert [as_values(r) for r in rows] == expected
    assert {n: as_values(r) for n, r in sought.items()} == {n: expected[n] for n in groups + inside}


@pytest.mark.parametrize("compression", CODECS)
def test_stripes_match_orc_cpp_writing_the_same_rows(compression):
    data = table()
    ours = written(data, compression)
    columns = decimal_columns(data)
    ours_tail = read_tail(memoryview(ours))
    offset = 0
    for stripe, stats in zip(stripes(ours), ours_tail.stripe_statistics, strict=True):
        rows = data.slice(offset, stripe["rows"])
        offset += stripe["rows"]
        sink = io.BytesIO()
        writer = orc.ORCWriter(sink, compression=compression, compression_strategy="speed")
        writer.write(rows)
        writer.close()
        theirs = sink.getvalue()
        (their_stripe,) = stripes(theirs)
        their_tail = read_tail(memoryview(theirs))
        assert ours_tail.repeated(FOOTER_TYPES) == their_tail.repeated(FOOTER_TYPES)
        ours_stats = [v for _, _, v in decode(stats)]
        theirs_stats = [v for _, _, v in decode(their_tail.stripe_statistics[0])]
        for column in columns:
            assert stripe["encodings"][column] == their_stripe["encodings"][column]
            assert ours_stats[column] == theirs_stats[column]
            assert stripe["streams"][(column, 1)] == their_stripe["streams"][(column, 1)]
            has_present = (column, 0) in their_stripe["streams"]
            assert ((column, 0) in stripe["streams"]) == has_present
            ours_index, their_index = stripe["row_index"][column], their_stripe["row_index"][column]
            assert [e[2] for e in ours_index] == [e[2] for e in their_index]
            if compression == "uncompressed":  # DATA's position: [offset], after PRESENT's 3
                at = 3 if has_present else 0
                assert [packed(e[1])[at] for e in ours_index] == [
                    packed(e[1])[at] for e in their_index
                ]
    assert offset == ROWS


def test_empty_and_all_null_files_match_orc_cpp():
    schema = table().schema
    for data in (schema.empty_table(), pa.table([pa.nulls(5000, f.type) for f in schema], schema)):
        ours = read_tail(memoryview(written(data, "zstd")))
        sink = io.BytesIO()
        orc.write_table(data, sink, compression="zstd")
        theirs = read_tail(memoryview(sink.getvalue()))
        assert ours.repeated(FOOTER_TYPES) == theirs.repeated(FOOTER_TYPES)
        assert ours.repeated(FOOTER_STATISTICS) == theirs.repeated(FOOTER_STATISTICS)
        assert orc.ORCFile(io.BytesIO(written(data, "zstd"))).read().equals(data)


@pytest.mark.parametrize("kind", [NONE, 1, 2, 4, 5])
def test_compressed_streams_decompress_to_their_bytes(kind):
    rng = np.random.default_rng(3)
    data = rng.integers(0, 4, 200_000, dtype=np.uint8).tobytes() + b"x" * 1000
    codec = Codec(kind, 64 * 1024)
    stored, starts = codec.compressed(data)
    assert codec.decompress(stored) == data
    assert len(starts) == (0 if kind == NONE else -(-len(data) // (64 * 1024)))
    assert codec.positions(64 * 1024, starts) == ([64 * 1024] if kind == NONE else [0, 64 * 1024])
