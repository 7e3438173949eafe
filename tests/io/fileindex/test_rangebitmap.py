"""Our range-bitmap indexes (Paimon 1.3+) are byte for byte what Java's RangeBitmap.Appender
writes, and say of each row what its value is.

No Java jar on PyPI builds range-bitmap indexes, so the expected bytes are laid out field by
field from Paimon 2.0's writers (RangeBitmap.Appender.serialize, ChunkedDictionary.Appender,
FixedLengthChunk / VariableLengthChunk.serializeChunk and serializeKeys, BitSliceIndexBitmap.
Appender.serialize, KeyFactory's serializers and default chunk sizes); roaring bitmaps are in the
portable format, run-optimized, as RoaringBitmap32.serialize writes them. tests/io/fileindex/
reader.py decodes the index as Java's readers do and answers eq, lt, gt, in and is-null.
"""

from __future__ import annotations

import struct
import zlib
from datetime import date, timedelta
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pypaimon.schema.data_types import AtomicType, DataField
from pyroaring import BitMap

from dagster_paimon.errors import UnsupportedLayoutError
from dagster_paimon.io.fileindex import FileIndexBuilder, file_index_plan
from dagster_paimon.io.fileindex.rangebitmap import RangeBitmapWriter
from dagster_paimon.io.fileindex.values import java_type
from tests.io.fileindex.reader import RangeBitmap, sections
from tests.io.fileindex.test_write import blob_of, compacted_files
from tests.lsm.kvmodel import read_rows, sorted_rows
from tests.lsm.tables import KEY, cdc_table, compact, write_history


def roaring(*rows: int) -> bytes:
    """RoaringBitmap32.serialize: run-optimized, portable format."""
    bitmap = BitMap(rows)
    bitmap.run_optimize()
    return bitmap.serialize()


def bsi(ebm: bytes, *slices: bytes) -> bytes:
    """BitSliceIndexBitmap.Appender.serialize: header length; version, slice count, ebm length,
    indexes length, (offset, length) of each slice; the ebm; the slices."""
    index, offset = b"", 0
    for s in slices:
        index += struct.pack(">ii", offset, len(s))
        offset += len(s)
    header = struct.pack(">bbii", 1, len(slices), len(ebm), len(index)) + index
    return struct.pack(">i", len(header)) + header + ebm + b"".join(slices)


def dictionary(chunks: list[bytes], keys: bytes) -> bytes:
    """ChunkedDictionary.Appender.serialize: header length 13; version, chunk count, offsets
    length, chunks length; each chunk's offset; the chunk headers; their keys."""
    offsets, position = b"", 0
    for c in chunks:
        offsets += struct.pack(">i", position)
        position += len(c)
    header = struct.pack(">biii", 1, len(chunks), len(offsets), position)
    return struct.pack(">i", len(header)) + header + offsets + b"".join(chunks) + keys


def range_bitmap(rows: int, count: int, bounds: bytes, dictionary: bytes, bsi: bytes) -> bytes:
    """RangeBitmap.Appender.serialize: header length; version, row count, distinct count, min,
    max, dictionary length; the dictionary; the bit-sliced index of the codes."""
    header = struct.pack(">bii", 1, rows, count) + bounds + struct.pack(">i", len(dictionary))
    return struct.pack(">i", len(header)) + header + dictionary + bsi


def string_key(text: str) -> bytes:
    """StringKeyFactory's serializer: length, then UTF-8 bytes."""
    data = text.encode()
    return struct.pack(">i", len(data)) + data


def written(values: pa.Array, type_name: str, chunk_size: int | None = None) -> bytes:
    writer = RangeBitmapWriter(java_type(AtomicType(type_name)), chunk_size)
    writer.write(values)
    return writer.serialized()


def test_int_keys_fill_fixed_length_chunks_of_chunk_size_bytes():
    # codes by sorted value: 1 -> 0, 3 -> 1, 5 -> 2, 7 -> 3, 9 -> 4
    values = pa.array([5, None, 3, 5, 9, 1, 3, 7], pa.int32())
    # FixedLengthChunk: version, first key, code, keys offset, size, keys length, key length;
    # 8 bytes take two 4-byte keys after the first
    chunks = [
        struct.pack(">bi", 1, 1) + struct.pack(">iiiii", 0, 0, 2, 8, 4),
        struct.pack(">bi", 1, 7) + struct.pack(">iiiii", 3, 8, 1, 4, 4),
    ]
    keys = struct.pack(">iii", 3, 5, 9)
    slices = (roaring(2, 6, 7), roaring(0, 3, 7), roaring(4))  # codes' bits 0, 1, 2
    expected = range_bitmap(
        8,
        5,
        struct.pack(">ii", 1, 9),
        dictionary(chunks, keys),
        bsi(roaring(0, 2, 3, 4, 5, 6, 7), *slices),
    )
    assert written(values, "INT", 8) == expected


def test_string_keys_fill_variable_length_chunks_with_their_offsets():
    values = pa.array(["b", None, "a", "ccc", "b", "é", "", "z" * 10])
    # sorted as unsigned bytes: "", a, b, ccc, zzzzzzzzzz, é (c3 a9)
    # VariableLengthChunk: version, first key, code, keys offset, size, offsets length, keys
    # length; a key takes 4 + its bytes and 4 bytes of offset, both within 20 bytes: a, b, ccc
    # fill 17, zzzzzzzzzz (14 more) starts the next chunk
    chunks = [
        struct.pack(">b", 1) + string_key("") + struct.pack(">iiiii", 0, 0, 3, 12, 17),
        struct.pack(">b", 1) + string_key("z" * 10) + struct.pack(">iiiii", 4, 29, 1, 4, 6),
    ]
    keys = struct.pack(">iii", 0, 5, 10) + string_key("a") + string_key("b") + string_key("ccc")
    keys += struct.pack(">i", 0) + string_key("é")
    slices = (roaring(2, 3, 5), roaring(0, 3, 4), roaring(5, 7))  # codes' bits 0, 1, 2
    expected = range_bitmap(
        8,
        6,
        string_key("") + string_key("é"),
        dictionary(chunks, keys),
        bsi(roaring(0, 2, 3, 4, 5, 6, 7), *slices),
    )
    assert written(values, "STRING", 20) == expected


def test_booleans_take_one_key_per_chunk_by_default():
    values = pa.array([True, False, None, True])
    chunks = [
        struct.pack(">bb", 1, 0) + struct.pack(">iiiii", 0, 0, 0, 0, 1),
        struct.pack(">bb", 1, 1) + struct.pack(">iiiii", 1, 0, 0, 0, 1),
    ]
    expected = range_bitmap(
        4,
        2,
        struct.pack(">bb", 0, 1),
        dictionary(chunks, b""),
        bsi(roaring(0, 1, 3), roaring(0, 3)),
    )
    assert written(values, "BOOLEAN") == expected


def test_a_column_of_nulls_has_no_keys_and_64_empty_slices():
    # BitSliceIndexBitmap.Appender(0, -1): Long.SIZE - numberOfLeadingZeros(-1) slices
    expected = range_bitmap(3, 0, b"", dictionary([], b""), bsi(roaring(), *[roaring()] * 64))
    assert written(pa.array([None, None, None], pa.string()), "STRING") == expected


def test_one_value_has_one_slice_and_floats_keep_their_bits():
    # Float.compare orders -0.0 below 0.0 and NaN above all; putFloat writes the raw bits
    values = pa.array([0.0, -0.0, float("nan"), float("-inf")], pa.float32())
    blob = written(values, "FLOAT")
    index = RangeBitmap(blob, "f")
    assert [struct.pack(">f", k) for k in index.keys] == [
        struct.pack(">f", v) for v in (float("-inf"), -0.0, 0.0, float("nan"))
    ]
    assert {r: index.order(v) for r, v in index.values().items()} == {
        r: index.order(v) for r, v in enumerate([0.0, -0.0, float("nan"), float("-inf")])
    }
    single = written(pa.array([7, 7], pa.int64()), "BIGINT")
    assert RangeBitmap(single, "q").slices == [BitMap()]


def _column(type_name: str, rng: np.random.Generator, rows: int) -> tuple[pa.Array, list]:
    """A column of repeated values with nulls, and each row's key as Java's converter has it."""
    distinct = int(rng.integers(1, 60))
    pick = rng.integers(0, distinct, rows)
    null = rng.random(rows) < 0.15
    if type_name in ("INT", "BIGINT", "TINYINT", "SMALLINT"):
        bits = {"INT": 32, "BIGINT": 64, "TINYINT": 8, "SMALLINT": 16}[type_name]
        pool = rng.integers(-(2 ** (bits - 1)), 2 ** (bits - 1) - 1, distinct, dtype=np.int64)
        keys = [int(pool[p]) for p in pick]
        arrow = pa.array(keys, getattr(pa, f"int{bits}")(), mask=null)
    elif type_name == "DATE":
        keys = [int(p) * 37 - 900 for p in pick]
        arrow = pa.array([date(1970, 1, 1) + timedelta(days=k) for k in keys], mask=null)
    elif type_name.startswith("TIMESTAMP"):
        micros = [int(p) * 1_234_567_891 - 10**11 for p in pick]
        arrow = pa.array(micros, pa.timestamp("us"), mask=null)
        keys = micros if type_name.endswith("(6)") else [m // 1000 for m in micros]
    elif type_name.startswith("DECIMAL"):
        keys = [int(p) * 98_765 - 1_000_000 for p in pick]
        arrow = pa.array([Decimal(k).scaleb(-3) for k in keys], pa.decimal128(12, 3), mask=null)
    elif type_name in ("FLOAT", "DOUBLE"):
        pool = [float("nan"), -0.0, 0.0, float("inf"), float("-inf")]
        pool += [float(v) for v in rng.normal(0, 1e3, distinct)]
        floats = [pool[p] for p in pick]
        if type_name == "FLOAT":
            floats = [struct.unpack(">f", struct.pack(">f", v))[0] for v in floats]
        arrow = pa.array(floats, pa.float32() if type_name == "FLOAT" else pa.float64(), mask=null)
        keys = floats
    elif type_name == "BOOLEAN":
        keys = [bool(p % 2) for p in pick]
        arrow = pa.array(keys, mask=null)
    else:
        keys = [("é" * int(p % 3) + "k" * int(p % 31) + str(p)) for p in pick]
        arrow = pa.array(keys, mask=null)
        keys = [k.encode() for k in keys]
    return arrow, [None if n else k for n, k in zip(null, keys, strict=True)]


FORMATS = {
    "INT": "i",
    "DATE": "i",
    "BIGINT": "q",
    "TIMESTAMP(3)": "q",
    "TIMESTAMP(6)": "q",
    "DECIMAL(12, 3)": "q",
    "TINYINT": "b",
    "SMALLINT": "h",
    "FLOAT": "f",
    "DOUBLE": "d",
    "BOOLEAN": "?",
    "STRING": "s",
}


@pytest.mark.parametrize("chunk_size", [None, "0b", "40b"])
@pytest.mark.parametrize("type_name", list(FORMATS))
def test_each_row_reads_back_and_queries_match_the_rows(type_name, chunk_size):
    rng = np.random.default_rng(zlib.crc32(f"{type_name}/{chunk_size}".encode()))
    arrow, keys = _column(type_name, rng, 300)
    options = {"file-index.range-bitmap.columns": "c"}
    if chunk_size:
        options["file-index.range-bitmap.c.chunk-size"] = chunk_size
    plan = file_index_plan(options, [DataField(0, "c", AtomicType(type_name))])
    builder = FileIndexBuilder(plan)
    for start in range(0, len(arrow), 7):
        builder.write(pa.record_batch({"c": arrow[start : start + 7]}))
    result = builder.finish()
    body = sections(result.embedded or result.sidecar)[("c", "range-bitmap")]
    assert body == written(arrow, type_name, None if not chunk_size else int(chunk_size[:-1]))

    index = RangeBitmap(body, FORMATS[type_name])
    order = index.order
    assert index.rid == len(keys)
    assert {r: order(k) for r, k in index.values().items()} == {
        r: order(k) for r, k in enumerate(keys) if k is not None
    }
    assert index.is_null() == BitMap(r for r, k in enumerate(keys) if k is None)
    present = sorted({order(k): k for k in keys if k is not None}.items())
    literals = [k for _, k in present]
    if type_name in FORMATS and FORMATS[type_name] in "ihqb" and present:
        low, high = present[0][1], present[-1][1]
        literals += [low - 1, high + 1, (low + high) // 2]
    if type_name == "STRING" and present:
        literals += [b"", b"\xff", present[0][1] + b"\x00", b"k"]
    for literal in literals:
        key = order(literal)

        def rows(test, key=key):
            return BitMap(r for r, k in enumerate(keys) if k is not None and test(order(k), key))

        assert index.eq(literal) == rows(lambda a, b: a == b)
        assert index.lt(literal) == rows(lambda a, b: a < b)
        assert index.lte(literal) == rows(lambda a, b: a <= b)
        assert index.gt(literal) == rows(lambda a, b: a > b)
        assert index.gte(literal) == rows(lambda a, b: a >= b)
    some = literals[::3]
    assert index.isin(some) == BitMap(
        r for r, k in enumerate(keys) if k is not None and order(k) in {order(s) for s in some}
    )
    _check_chunks(index, type_name, chunk_size)


def _check_chunks(index: RangeBitmap, type_name: str, chunk_size: str | None) -> None:
    """Every chunk took the keys after its first as long as they fit (tryAdd)."""
    limit = int(chunk_size[:-1]) if chunk_size else None
    if limit is None:
        limit = 0 if type_name in ("BOOLEAN", "TINYINT", "SMALLINT") else 16 * 1024
    for code, count in index.chunks:
        following = index.keys[code + 1 :]
        if FORMATS[type_name] == "s":
            sizes = np.cumsum([4 + len(k) for k in following])
            fits = min(int(np.searchsorted(sizes, limit, side="right")), limit // 4)
        else:
            fits = limit // struct.calcsize(">" + FORMATS[type_name])
        assert count == min(fits, len(following))


@pytest.mark.parametrize(
    ("type_name", "named"),
    [("DECIMAL(20, 2)", "DECIMAL"), ("TIMESTAMP(9)", "TIMESTAMP"), ("BYTES", "BYTES")],
)
def test_types_java_cannot_key_are_refused(type_name, named):
    fields = [DataField(0, "c", AtomicType(type_name))]
    with pytest.raises(UnsupportedLayoutError, match=named):
        file_index_plan({"file-index.range-bitmap.columns": "c"}, fields)


RANGE_INDEXED = {
    "file-index.range-bitmap.columns": "id,name,amount",
    "file-index.range-bitmap.name.chunk-size": "64b",
    "file-index.bitmap.columns": "op",
}


def test_compaction_outputs_carry_range_bitmaps_of_their_rows_and_read_back(warehouse):
    table = cdc_table(warehouse, **RANGE_INDEXED)
    model = write_history(table, 5)
    compact(table, warehouse, full=True)
    assert sorted_rows(read_rows(table), KEY) == sorted_rows(model.values(), KEY)
    files = compacted_files(table)
    assert files
    formats = {"id": "q", "name": "s", "amount": "d"}
    for path, meta in files:
        found = sections(blob_of(path, meta))
        assert {c for c, _ in found} == {"id", "name", "amount", "op"}
        data = pq.ParquetFile(path).read().to_pydict()
        for column, fmt in formats.items():
            index = RangeBitmap(found[(column, "range-bitmap")], fmt)
            values = [v.encode() if isinstance(v, str) else v for v in data[column]]
            assert index.rid == len(values)
            assert index.values() == {r: v for r, v in enumerate(values) if v is not None}
            for literal in [v for v in values if v is not None][:5]:
                assert index.eq(literal) == BitMap(r for r, v in enumerate(values) if v == literal)
                assert index.lt(literal) == BitMap(
                    r for r, v in enumerate(values) if v is not None and v < literal
                )
                assert index.gt(literal) == BitMap(
                    r for r, v in enumerate(values) if v is not None and v > literal
                )
