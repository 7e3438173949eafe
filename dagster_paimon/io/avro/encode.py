"""Encoding Arrow columns as Avro with numpy: every column becomes its rows' bytes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa

from dagster_paimon.errors import SchemaMismatchError
from dagster_paimon.io.varint import zigzag_varints


class _Encoded(NamedTuple):
    """Every row's bytes: row i is data[offsets[i]:offsets[i + 1]] (offsets start at 0)."""

    data: np.ndarray
    offsets: np.ndarray


def _offsets(lengths: np.ndarray) -> np.ndarray:
    """Row offsets from row lengths."""
    offsets = np.zeros(len(lengths) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return offsets


def _bytes_per_row(rows: int, data: np.ndarray) -> _Encoded:
    """Rows of equal width, laid out back to back in data."""
    return _Encoded(data, np.arange(rows + 1, dtype=np.int64) * (len(data) // max(rows, 1)))


def _varints(values: np.ndarray) -> _Encoded:
    """Avro longs (zigzag varints), one per row."""
    data, ends = zigzag_varints(values.astype(np.int64))
    offsets = np.zeros(len(ends) + 1, np.int64)
    offsets[1:] = ends
    return _Encoded(data, offsets)


def _concat(parts: Sequence[_Encoded]) -> _Encoded:
    """Rows whose bytes are each part's bytes for that row, in order."""
    if len(parts) == 1:
        return parts[0]
    lengths = [np.diff(p.offsets) for p in parts]
    offsets = _offsets(np.sum(lengths, axis=0))
    out = np.empty(int(offsets[-1]), np.uint8)
    start = offsets[:-1].copy()
    for part, length in zip(parts, lengths, strict=True):
        out[np.repeat(start - part.offsets[:-1], length) + np.arange(len(part.data))] = part.data
        start += length
    return _Encoded(out, offsets)


def _keep(part: _Encoded, valid: np.ndarray) -> _Encoded:
    """The part with the rows outside `valid` emptied."""
    lengths = np.diff(part.offsets)
    return _Encoded(part.data[np.repeat(valid, lengths)], _offsets(lengths * valid))


def _valid(arr: pa.Array) -> np.ndarray:
    """Which rows are not null."""
    if arr.null_count == 0:
        return np.ones(len(arr), bool)
    return arr.is_valid().to_numpy(zero_copy_only=False)


def _numbers(arr: pa.Array, dtype: Any) -> np.ndarray:
    """A primitive array as numpy, nulls as zero."""
    if arr.null_count:
        arr = arr.fill_null(pa.scalar(0, arr.type) if not pa.types.is_boolean(arr.type) else False)
    return arr.to_numpy(zero_copy_only=False).astype(dtype, copy=False)


def _parts(arr: pa.Array, nullable: bool) -> list[_Encoded]:
    """A column's rows as parts whose concatenation is each row's Avro encoding; a nullable
    one starts with its union index (0 null, 1 value) and a null row has nothing more."""
    parts = _value_parts(arr)
    if not nullable:
        return parts
    valid = _valid(arr)
    index = _bytes_per_row(len(arr), np.where(valid, 2, 0).astype(np.uint8))
    if arr.null_count == 0:
        return [index, *parts]
    return [index, *(_keep(p, valid) for p in parts)]


def _value_parts(arr: pa.Array) -> list[_Encoded]:
    """A column's non-null encoding, as FieldWriterFactory writes each type."""
    t = arr.type
    if pa.types.is_boolean(t):
        return [_bytes_per_row(len(arr), _numbers(arr, np.uint8))]
    if pa.types.is_signed_integer(t):
        return [_varints(_numbers(arr, np.int64))]
    if pa.types.is_float32(t) or pa.types.is_float64(t):
        dtype = np.dtype("<f4") if pa.types.is_float32(t) else np.dtype("<f8")
        return [_bytes_per_row(len(arr), _numbers(arr, dtype).view(np.uint8))]
    if pa.types.is_date32(t) or pa.types.is_time32(t):
        return [_varints(_numbers(arr.cast(pa.int32()), np.int64))]
    if pa.types.is_timestamp(t):
        scale = 1000 if t.unit == "s" else 1
        return [_varints(_numbers(arr.cast(pa.int64()), np.int64) * scale)]
    if pa.types.is_decimal128(t):
        return _with_length(_unscaled(arr))
    if pa.types.is_string(t) or pa.types.is_binary(t):
        return _with_length(_payload(arr, np.int32))
    if pa.types.is_large_string(t) or pa.types.is_large_binary(t):
        return _with_length(_payload(arr, np.int64))
    if pa.types.is_map(t):
        keys, items = _children(arr, arr.keys), _children(arr, arr.items)
        entries = _parts(keys, False) + _parts(items, t.item_field.nullable)
        return _repeated(_concat(entries), _list_offsets(arr))
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        items = _children(arr, arr.values)
        return _repeated(_concat(_parts(items, t.value_field.nullable)), _list_offsets(arr))
    if pa.types.is_fixed_size_list(t):
        size = t.list_size
        items = arr.values.slice(arr.offset * size, len(arr) * size)
        element = _concat(_parts(items, t.value_field.nullable))
        return _repeated(element, np.arange(len(arr) + 1, dtype=np.int64) * size)
    if pa.types.is_struct(t):
        return [p for i, f in enumerate(t) for p in _parts(arr.field(i), f.nullable)]
    raise SchemaMismatchError(f"Arrow type {t} has no Avro encoding in Paimon's format")


def _list_offsets(arr: pa.Array) -> np.ndarray:
    """A list or map array's element offsets, from 0."""
    offsets = arr.offsets.to_numpy(zero_copy_only=False).astype(np.int64)
    return offsets - offsets[0]


def _children(arr: pa.Array, values: pa.Array) -> pa.Array:
    """The elements a list or map array's rows use (its offsets may not start at 0)."""
    offsets = arr.offsets
    first = offsets[0].as_py()
    return values.slice(first, offsets[len(arr)].as_py() - first)


def _repeated(elements: _Encoded, offsets: np.ndarray) -> list[_Encoded]:
    """Avro arrays and maps: an item count (when not empty), the items, a 0 count."""
    counts = np.diff(offsets)
    items = _Encoded(elements.data, elements.offsets[offsets])
    end = _bytes_per_row(len(counts), np.zeros(len(counts), np.uint8))
    return [_keep(_varints(counts), counts > 0), items, end]


def _payload(arr: pa.Array, width: Any) -> _Encoded:
    """The bytes of a string or binary array, row by row."""
    offsets = np.frombuffer(arr.buffers()[1], width)[arr.offset : arr.offset + len(arr) + 1]
    offsets = offsets.astype(np.int64)
    data = np.frombuffer(arr.buffers()[2] or b"", np.uint8)[offsets[0] : offsets[-1]]
    return _Encoded(data, offsets - offsets[0])


def _unscaled(arr: pa.Array) -> _Encoded:
    """Decimals as Java's BigInteger.toByteArray: minimal big-endian two's complement."""
    n = len(arr)
    raw = np.frombuffer(arr.buffers()[1], np.uint8)[arr.offset * 16 : (arr.offset + n) * 16]
    big_endian = raw.reshape(n, 16)[:, ::-1]
    negative = big_endian[:, 0] >= 0x80
    sign = np.where(negative, 0xFF, 0).astype(np.uint8)
    differs = big_endian != sign[:, None]
    first = np.where(differs.any(axis=1), differs.argmax(axis=1), 16)
    top = big_endian[np.arange(n), np.minimum(first, 15)] >= 0x80
    start = np.where((first == 16) | (top != negative), first - 1, first)
    keep = np.arange(16) >= start[:, None]
    return _Encoded(big_endian[keep], _offsets(16 - start))


def _with_length(payload: _Encoded) -> list[_Encoded]:
    """Avro bytes and strings: the length, then the bytes."""
    return [_varints(np.diff(payload.offsets)), payload]


def encode_rows(schema: pa.Schema, batch: pa.RecordBatch) -> bytes:
    """The rows' Avro encoding, back to back."""
    parts = [
        p
        for f, column in zip(schema, batch.columns, strict=True)
        for p in _parts(column, f.nullable)
    ]
    return _concat(parts).data.tobytes()
