"""The range-bitmap file index (RangeBitmapFileIndex, Paimon 1.3+), built from a file's values.

Java's RangeBitmap.Appender keeps a TreeMap from each distinct non-null value (its KeyFactory's
key, compared by its comparator) to its rows; serializing gives each value its rank in that map
as its code and writes a header (row count, distinct count, min, max), a ChunkedDictionary of the
sorted values and a BitSliceIndexBitmap of the rows' codes. The dictionary cuts the sorted values
into chunks: a chunk's first value sits in its header, the following ones in its keys, as many as
fit `chunk-size` bytes (16 kb; 0 b for booleans, tinyints and smallints: one value per chunk).
"""

from __future__ import annotations

import struct

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dagster_paimon.errors import InternalError
from dagster_paimon.io.fileindex.bitmap import roaring_bytes
from dagster_paimon.io.fileindex.values import (
    JavaType,
    byte_buffers,
    decimal_unscaled,
    integral_values,
    nulls,
)

RANGE_BITMAP = "range-bitmap"
CHUNK_SIZE = "chunk-size"
DEFAULT_CHUNK_SIZE = 16 * 1024
UNCHUNKED_ROOTS = ("BOOLEAN", "TINYINT", "SMALLINT")  # KeyFactory.defaultChunkSize "0b"
VERSION_1 = 1
MAX_DECIMAL_PRECISION = 18
MAX_TIMESTAMP_PRECISION = 6
SUPPORTED_KINDS = ("integral", "float", "boolean", "string", "decimal")
_BE = {1: ">i1", 2: ">i2", 4: ">i4", 8: ">i8"}
_INT = struct.Struct(">i")


def default_chunk_size(jtype: JavaType) -> int:
    """KeyFactory.defaultChunkSize of the column's key factory, in bytes."""
    return 0 if jtype.root in UNCHUNKED_ROOTS else DEFAULT_CHUNK_SIZE


def check_type(jtype: JavaType) -> None:
    """Refuse what KeyFactory.create refuses (Java's writer fails on it)."""
    if jtype.kind not in SUPPORTED_KINDS:
        raise InternalError(f"a range-bitmap index does not take {jtype.root} values")
    if jtype.kind == "decimal" and jtype.precision > MAX_DECIMAL_PRECISION:
        raise InternalError("a range-bitmap index takes DECIMAL with a precision in [0, 18] only")
    if jtype.root in ("TIMESTAMP", "TIMESTAMP_LTZ") and jtype.precision > MAX_TIMESTAMP_PRECISION:
        raise InternalError("a range-bitmap index takes TIMESTAMP with a precision in [0, 6] only")


class SortedKeys:
    """A column's distinct non-null keys sorted by the KeyFactory comparator, serialized by its
    KeySerializer into one buffer, with each present row's code (the rank of its key)."""

    def __init__(self, column: pa.Array, jtype: JavaType, present: np.ndarray):
        self.fixed = jtype.kind != "string"
        if jtype.kind == "string":
            self._strings(column.filter(pa.array(present)))
            return
        if jtype.kind == "float":
            order_keys, raw = _float_keys(column, jtype.width)
            width = jtype.width
        elif jtype.kind == "boolean":
            raw = np.asarray(pc.fill_null(column, False).to_numpy(zero_copy_only=False), np.int64)
            order_keys, width = raw, 1
        elif jtype.kind == "decimal":
            raw = decimal_unscaled(column, jtype)
            order_keys, width = raw, 8
        else:
            raw = integral_values(column, jtype)
            order_keys, width = raw, jtype.width
        _, first, codes = np.unique(order_keys[present], return_index=True, return_inverse=True)
        self.codes = codes.reshape(-1).astype(np.int64)
        # TreeMap.computeIfAbsent keeps the first key of those comparing equal (NaN payloads)
        self.data = raw[present][first].astype(_BE[width]).tobytes()
        self.starts = np.arange(first.size + 1, dtype=np.int64) * width

    def _strings(self, column: pa.Array) -> None:
        """UTF-8 keys, compared as unsigned bytes then by length (BinaryString.compareTo),
        each serialized as its length then its bytes."""
        encoded = pc.dictionary_encode(column)
        order = np.asarray(pc.sort_indices(encoded.dictionary.cast(pa.large_binary())), np.int64)
        rank = np.empty_like(order)
        rank[order] = np.arange(order.size)
        indices = np.asarray(encoded.indices.to_numpy(zero_copy_only=False), np.int64)
        self.codes = rank[indices]
        data, offsets = byte_buffers(encoded.dictionary.take(pa.array(order)))
        lengths = (offsets[1:] - offsets[:-1]).astype(np.int64)
        self.starts = np.concatenate([[0], np.cumsum(lengths + 4)]).astype(np.int64)
        out = np.empty(int(self.starts[-1]), dtype=np.uint8)
        prefix = self.starts[:-1, None] + np.arange(4)
        out[prefix.reshape(-1)] = (
            lengths.astype(">i4").view(np.uint8).reshape(-1, 4).reshape(-1)
            if lengths.size
            else np.zeros(0, np.uint8)
        )
        shift = self.starts[:-1] + 4 - (offsets[:-1] - offsets[0])
        body = np.repeat(shift, lengths) + np.arange(int(lengths.sum()))
        out[body] = data[offsets[0] : offsets[-1]]
        self.data = out.tobytes()

    def __len__(self) -> int:
        return self.starts.size - 1

    def key(self, index: int) -> bytes:
        """The serialized key of one code."""
        return self.data[self.starts[index] : self.starts[index + 1]]


def _float_keys(column: pa.Array, width: int) -> tuple[np.ndarray, np.ndarray]:
    """(keys ordered as Float.compare / Double.compare, raw bits as putFloat writes them)."""
    if width == 4:
        values = column.cast(pa.float32())
        floats = pc.fill_null(values, 0.0).to_numpy(zero_copy_only=False).astype(np.float32)
        raw = floats.view(np.int32).astype(np.int64)
        canonical = np.where(np.isnan(floats), 0x7FC00000, raw)
        flip = np.int64(0x7FFFFFFF)
    else:
        values = column.cast(pa.float64())
        floats = pc.fill_null(values, 0.0).to_numpy(zero_copy_only=False).astype(np.float64)
        raw = floats.view(np.int64)
        canonical = np.where(np.isnan(floats), 0x7FF8000000000000, raw)
        flip = np.int64(0x7FFFFFFFFFFFFFFF)
    return np.where(canonical < 0, canonical ^ flip, canonical), raw


def _chunk_heads(keys: SortedKeys, chunk_size: int) -> np.ndarray:
    """The code of each chunk's first key. A chunk takes the following keys while they fit
    `chunk_size` bytes (FixedLengthChunk.tryAdd; VariableLengthChunk.tryAdd also needs room for
    each key's 4-byte offset in a buffer of the same size)."""
    n = len(keys)
    if keys.fixed:
        width = int(keys.starts[1] - keys.starts[0])
        return np.arange(0, n, 1 + chunk_size // width, dtype=np.int64)
    heads = []
    head = 0
    while head < n:
        heads.append(head)
        limit = keys.starts[head + 1] + chunk_size
        fits = int(np.searchsorted(keys.starts, limit, side="right")) - head - 2
        head += 1 + min(fits, chunk_size // 4)
    return np.array(heads, dtype=np.int64)


def _dictionary(keys: SortedKeys | None, chunk_size: int) -> bytes:
    """ChunkedDictionary.Appender.serialize of the sorted keys: header, chunk offsets, chunk
    headers, then the chunks' keys (a variable-length chunk's key offsets before its keys)."""
    if keys is None:
        return struct.pack(">ibiii", 13, VERSION_1, 0, 0, 0)
    heads = _chunk_heads(keys, chunk_size)
    ends = np.append(heads[1:], len(keys))
    taken = ends - heads - 1
    if keys.fixed:
        chunks, sizes, bodies = _fixed_chunks(keys, heads, taken)
    else:
        chunks, sizes, bodies = _variable_chunks(keys, heads, ends, taken)
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(">i4")
    header = struct.pack(">ibiii", 13, VERSION_1, heads.size, 4 * heads.size, len(chunks))
    return header + offsets.tobytes() + chunks + bodies


def _fixed_chunks(
    keys: SortedKeys, heads: np.ndarray, taken: np.ndarray
) -> tuple[bytes, np.ndarray, bytes]:
    """FixedLengthChunk headers (version, first key, code, keys offset, size, keys length,
    key length) and the keys after each chunk's first."""
    width = int(keys.starts[1] - keys.starts[0])
    record = np.dtype(
        [
            ("v", "i1"),
            ("key", f"V{width}"),
            ("code", ">i4"),
            ("offset", ">i4"),
            ("size", ">i4"),
            ("length", ">i4"),
            ("width", ">i4"),
        ]
    )
    table = np.zeros(heads.size, dtype=record)
    all_keys = np.frombuffer(keys.data, dtype=f"V{width}")
    table["v"] = VERSION_1
    table["key"] = all_keys[heads]
    table["code"] = heads
    table["offset"] = np.concatenate([[0], np.cumsum(taken * width)[:-1]])
    table["size"] = taken
    table["length"] = taken * width
    table["width"] = width
    rest = np.ones(len(keys), dtype=bool)
    rest[heads] = False
    sizes = np.full(heads.size, record.itemsize, dtype=np.int64)
    return table.tobytes(), sizes, all_keys[rest].tobytes()


def _variable_chunks(
    keys: SortedKeys, heads: np.ndarray, ends: np.ndarray, taken: np.ndarray
) -> tuple[bytes, np.ndarray, bytes]:
    """VariableLengthChunk headers (version, first key, code, keys offset, size, offsets length,
    keys length) and each chunk's key offsets then keys."""
    chunks, bodies = [], bytearray()
    for head, end, count in zip(heads.tolist(), ends.tolist(), taken.tolist(), strict=True):
        first = keys.starts[head + 1]
        keys_bytes = keys.data[first : keys.starts[end]]
        within = (keys.starts[head + 1 : end] - first).astype(">i4").tobytes()
        chunks.append(
            struct.pack(">b", VERSION_1)
            + keys.key(head)
            + struct.pack(">iiiii", head, len(bodies), count, len(within), len(keys_bytes))
        )
        bodies += within + keys_bytes
    sizes = np.array([len(c) for c in chunks], dtype=np.int64)
    return b"".join(chunks), sizes, bytes(bodies)


def _bit_slices(rows: np.ndarray, codes: np.ndarray, cardinality: int) -> bytes:
    """BitSliceIndexBitmap.Appender(0, cardinality - 1).serialize: header (version, slice count,
    existence bitmap length, slice offsets and lengths), the existence bitmap, the slices.
    With no values the range is [0, -1] and Java sizes it as 64 slices."""
    high = cardinality - 1
    count = 64 if high < 0 else max(high.bit_length(), 1)
    ebm = roaring_bytes(rows)
    slices = [roaring_bytes(rows[(codes >> bit) & 1 == 1]) for bit in range(count)]
    starts = np.concatenate([[0], np.cumsum([len(s) for s in slices])])[:-1]
    lengths = np.array([len(s) for s in slices], dtype=np.int64)
    index = np.stack([starts, lengths], axis=1).astype(">i4").tobytes()
    header = struct.pack(">bbii", VERSION_1, count, len(ebm), len(index)) + index
    return _INT.pack(len(header)) + header + ebm + b"".join(slices)


class RangeBitmapWriter:
    """One column's range-bitmap index: slices are kept until the file is finished."""

    def __init__(self, jtype: JavaType, chunk_size: int | None = None):
        check_type(jtype)
        self.jtype = jtype
        self.chunk_size = default_chunk_size(jtype) if chunk_size is None else chunk_size
        self.slices: list[pa.Array] = []

    def write(self, column: pa.Array) -> None:
        """Take the next rows of the file."""
        self.slices.append(column)

    def serialized(self) -> bytes:
        """The index of every row written, as RangeBitmap.Appender.serialize."""
        column = pa.concat_arrays(self.slices) if self.slices else pa.array([], pa.null())
        present = ~nulls(column)
        rows = np.flatnonzero(present)
        keys = SortedKeys(column, self.jtype, present) if rows.size else None
        cardinality = len(keys) if keys is not None else 0
        codes = keys.codes if keys is not None else np.zeros(0, np.int64)
        bounds = keys.key(0) + keys.key(cardinality - 1) if keys is not None else b""
        dictionary = _dictionary(keys, self.chunk_size)
        header = struct.pack(">bii", VERSION_1, len(column), cardinality) + bounds
        header += _INT.pack(len(dictionary))
        return _INT.pack(len(header)) + header + dictionary + _bit_slices(rows, codes, cardinality)
