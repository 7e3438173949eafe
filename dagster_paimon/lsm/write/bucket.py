"""Paimon's fixed-bucket function, vectorized: Murmur3 over each row's BinaryRow bucket key.

Java's DefaultBucketFunction serialises the bucket-key columns into a BinaryRow (row kind INSERT)
and takes `abs(hashBytesByWords(row) % buckets)`. pypaimon does the same one row at a time in
Python; here the BinaryRow bytes are built column by column in numpy and hashed four bytes at a
time across all rows, so ingest never loops over rows.

BinaryRow layout: a null bit set (8 header bits, then one bit per field) rounded up to 8-byte
words, one 8-byte slot per field, then a variable part. Fixed-width values sit in their slot.
Strings and binaries of at most 7 bytes are inlined with `0x80 | length` in the slot's last byte;
longer ones go to the variable part, padded to 8 bytes, with `offset << 32 | length` in the
slot. Decimals of precision > 18 take 16 bytes of the variable part (minimal big-endian two's
complement); timestamps of precision > 3 keep millis there and nanos-of-milli in the slot.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from dagster_paimon.errors import InvalidOptionError, SchemaMismatchError
from dagster_paimon.format.schema import TableSchema
from dagster_paimon.options import (
    BUCKET_FUNCTION_TYPE,
    DYNAMIC_BUCKET,
    POSTPONE_BUCKET,
    bucket,
    read_option,
)

SEED = 42
UNAWARE_BUCKET = DYNAMIC_BUCKET
"""Bucket -1 on an append table: no bucket key, every file in bucket 0 (Java's BUCKET_UNAWARE)."""
_C1 = np.uint32(0xCC9E2D51)
_C2 = np.uint32(0x1B873593)
_M5 = np.uint32(5)
_N1 = np.uint32(0xE6546B64)
_F1 = np.uint32(0x85EBCA6B)
_F2 = np.uint32(0xC2B2AE35)
HEADER_BITS = 8
MAX_INLINE_BYTES = 7
_WORD = np.dtype("<u4")
_SLOT = np.dtype("<u8")


def _mix(h: np.ndarray, k: np.ndarray) -> np.ndarray:
    """One Murmur3 round: mix the word `k` into the running hash `h` (uint32 arrays)."""
    k = k * _C1
    k = (k << 15) | (k >> 17)
    k *= _C2
    h = h ^ k
    h = (h << 13) | (h >> 19)
    return h * _M5 + _N1


def _finish(h: npt.NDArray[np.uint32], length: np.ndarray) -> npt.NDArray[np.uint32]:
    """Murmur3's final avalanche with the byte length folded in."""
    h = h ^ length.astype(np.uint32)
    h ^= h >> 16
    h *= _F1
    h ^= h >> 13
    h *= _F2
    h ^= h >> 16
    return h


_TAIL_MASKS = np.array([0, 0xFF, 0xFFFF, 0xFFFFFF, 0xFFFFFFFF], dtype=np.uint32)


@dataclass
class _Field:
    """One column in BinaryRow form: its slots and nulls, and its variable-part words if any.

    `var_counts` is the number of 4-byte words each row adds to the variable part (0 when the
    value is inline or null); `var_word(j, rows)` reads word j of those rows (all rows if None).
    """

    slots: np.ndarray
    nulls: np.ndarray
    var_counts: np.ndarray | None = None
    var_word: Callable[[int, np.ndarray | None], np.ndarray] | None = None


def _filled(array: pa.Array, fill: object, cast: pa.DataType | None = None) -> np.ndarray:
    """Values of an array as numpy, nulls replaced so the buffer is well defined."""
    if cast is not None:
        array = array.cast(cast)
    return np.asarray(pc.fill_null(array, fill).to_numpy(zero_copy_only=False))


def _word_matrix_reader(matrix: np.ndarray) -> Callable[[int, np.ndarray | None], np.ndarray]:
    """Words of fixed-size variable chunks held as an (rows, words) uint32 matrix."""

    def read(j: int, rows: np.ndarray | None) -> np.ndarray:
        return matrix[:, j] if rows is None else matrix[rows, j]

    return read


def _bytes_field(array: pa.Array) -> _Field:
    """Strings and binaries: inline up to 7 bytes, else padded to 8 bytes in the variable part.

    Variable-part words are read straight from Arrow's data buffer through a byte-strided
    uint32 view; bytes past a value's end are masked to the zero padding BinaryRow writes.
    """
    if pa.types.is_large_string(array.type) or pa.types.is_string(array.type):
        array = array.cast(pa.large_string())
    else:
        array = array.cast(pa.large_binary())
    n = len(array)
    nulls = np.asarray(array.is_null())
    buffers = array.buffers()
    offsets = np.frombuffer(buffers[1], dtype=np.int64)[array.offset : array.offset + n + 1]
    data = np.frombuffer(buffers[2] or b"", dtype=np.uint8)
    padded = np.concatenate([data, np.zeros(8, dtype=np.uint8)])
    starts = offsets[:-1]
    lengths = np.where(nulls, 0, offsets[1:] - starts)
    words = np.ndarray(shape=(padded.size - 3,), dtype=_WORD, buffer=padded, strides=(1,))
    inline = (lengths <= MAX_INLINE_BYTES) & ~nulls
    long = ~inline & ~nulls
    low = words[starts] & _TAIL_MASKS[np.minimum(lengths, 4)]
    high = words[starts + 4] & _TAIL_MASKS[np.clip(lengths - 4, 0, 3)]
    header = (0x80 | lengths).astype(np.uint64) << np.uint64(56)
    packed = low.astype(np.uint64) | (high.astype(np.uint64) << np.uint64(32)) | header
    slots = np.where(inline, packed, np.where(long, lengths, 0).astype(np.uint64))
    counts = np.where(long, (lengths + 7) // 8 * 2, 0)

    def read(j: int, rows: np.ndarray | None) -> np.ndarray:
        first = starts if rows is None else starts[rows]
        size = lengths if rows is None else lengths[rows]
        tail = np.clip(size - 4 * j, 0, 4)
        return words[first + 4 * j] & _TAIL_MASKS[tail]

    return _Field(slots, nulls, counts, read)


def _bit_length(values: np.ndarray) -> np.ndarray:
    """Bits needed for each unsigned 64-bit value (0 for 0)."""
    x = values.copy()
    bits = np.zeros(len(values), dtype=np.int64)
    for shift in (32, 16, 8, 4, 2, 1):
        high = (x >> np.uint64(shift)) > 0
        bits += high * shift
        x = np.where(high, x >> np.uint64(shift), x)
    return bits + (x > 0)


def _wide_decimal_field(array: pa.Array, nulls: np.ndarray) -> _Field:
    """Decimals of precision > 18: BigInteger.toByteArray() of the unscaled value, 16 bytes."""
    n = len(array)
    raw = np.frombuffer(array.buffers()[1], dtype=np.uint8)[array.offset * 16 :][: n * 16]
    little = raw.reshape(n, 16)
    halves = little.view("<u8").reshape(n, 2)
    low, high = halves[:, 0].copy(), halves[:, 1].copy()
    negative = (high >> np.uint64(63)) == 1
    low = np.where(negative, ~low, low)
    high = np.where(negative, ~high, high)
    bits = np.where(high > 0, 64 + _bit_length(high), _bit_length(low))
    lengths = np.where(nulls, 0, bits // 8 + 1)
    big_endian = little[:, ::-1]
    columns = np.arange(16)
    index = np.minimum((16 - lengths)[:, None] + columns[None, :], 15)
    keep = columns[None, :] < lengths[:, None]
    chunks = np.where(keep, np.take_along_axis(big_endian, index, 1), 0).astype(np.uint8)
    present = ~nulls
    slots = lengths.astype(np.uint64)
    matrix = np.ascontiguousarray(chunks).view(_WORD).reshape(n, 4)
    return _Field(slots, nulls, np.where(present, 4, 0), _word_matrix_reader(matrix))


def _timestamp_field(array: pa.Array, nulls: np.ndarray) -> _Field:
    """Timestamps: millis in the slot up to precision 3, else millis + nanos-of-milli split."""
    unit = array.type.unit
    values = _filled(array, 0, pa.int64()).astype(np.int64)
    if unit in ("s", "ms"):
        millis = values * 1000 if unit == "s" else values
        return _Field(np.where(nulls, 0, millis).view(np.uint64), nulls)
    per_milli = 1000 if unit == "us" else 1_000_000
    millis = np.floor_divide(values, per_milli)
    nanos = (values - millis * per_milli) * (1_000_000 // per_milli)
    present = ~nulls
    slots = np.where(present, nanos, 0).astype(np.uint64)
    matrix = millis.astype("<i8").view(_WORD).reshape(len(values), 2)
    return _Field(slots, nulls, np.where(present, 2, 0), _word_matrix_reader(matrix))


def _field(array: pa.Array) -> _Field:
    """Encode one bucket-key column of the table's Arrow type."""
    t = array.type
    nulls = np.asarray(array.is_null())
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return _bytes_field(array)
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return _bytes_field(array)
    if pa.types.is_timestamp(t):
        return _timestamp_field(array, nulls)
    if pa.types.is_decimal(t):
        if t.precision > 18:
            return _wide_decimal_field(array, nulls)
        raw = np.frombuffer(array.buffers()[1], dtype="<u8")
        slots = raw[array.offset * 2 :][: len(array) * 2].reshape(-1, 2)[:, 0]
        return _Field(np.where(nulls, 0, slots).astype(np.uint64), nulls)
    if pa.types.is_boolean(t):
        values = _filled(array, False).astype(np.uint64)
    elif pa.types.is_integer(t):
        values = _filled(array, 0).astype(np.int64).view(np.uint64)
        if t.bit_width < 64:
            values = values & np.uint64((1 << t.bit_width) - 1)
    elif pa.types.is_float32(t):
        values = _filled(array, 0.0).astype(np.float32).view(np.uint32).astype(np.uint64)
    elif pa.types.is_float64(t):
        values = _filled(array, 0.0).astype(np.float64).view(np.uint64)
    elif pa.types.is_date32(t) or pa.types.is_time32(t):
        values = _filled(array, 0, pa.int32()).astype(np.uint32).astype(np.uint64)
    else:
        raise SchemaMismatchError(f"Paimon cannot use a column of type {t} as a bucket key")
    return _Field(np.where(nulls, 0, values).astype(np.uint64), nulls)


def binary_row_hashes(columns: Sequence[pa.Array | pa.ChunkedArray]) -> np.ndarray:
    """BinaryRow.hashCode() of every row of these columns, as Java ints (int32)."""
    arrays = [c.combine_chunks() if isinstance(c, pa.ChunkedArray) else c for c in columns]
    n = len(arrays[0]) if arrays else 0
    if n == 0:
        return np.zeros(0, dtype=np.int32)
    null_words = (len(arrays) + 63 + HEADER_BITS) // 64
    fixed_bytes = 8 * (null_words + len(arrays))
    fixed = np.zeros((n, null_words + len(arrays)), dtype=np.uint64)
    fields = [_field(a) for a in arrays]
    var_bytes = np.zeros(n, dtype=np.int64)
    for i, f in enumerate(fields):
        bit = i + HEADER_BITS
        fixed[f.nulls, bit // 64] |= np.uint64(1 << (bit % 64))
        slots = f.slots
        if f.var_counts is not None:
            offsets = (fixed_bytes + var_bytes).astype(np.uint64) << np.uint64(32)
            slots = np.where(f.var_counts > 0, slots | offsets, slots)
            var_bytes = var_bytes + 4 * f.var_counts
        fixed[:, null_words + i] = slots
    hashes = np.full(n, SEED, dtype=np.uint32)
    words = fixed.astype(_SLOT).view(_WORD).reshape(n, -1)
    for j in range(words.shape[1]):
        hashes = _mix(hashes, words[:, j])
    for f in fields:
        if f.var_counts is not None and f.var_word is not None:
            hashes = _mix_variable_part(hashes, f.var_counts, f.var_word)
    return _finish(hashes, fixed_bytes + var_bytes).view(np.int32)


def _mix_variable_part(
    hashes: np.ndarray,
    counts: np.ndarray,
    read: Callable[[int, np.ndarray | None], np.ndarray],
) -> np.ndarray:
    """Continue every row's hash over one field's variable-part words.

    Fields are mixed in field order, so each row still sees its bytes in BinaryRow order. Rows
    are visited longest first, so word j touches exactly the rows that have a word j.
    """
    most = int(counts.max())
    if most == 0:
        return hashes
    if (counts == most).all():
        for j in range(most):
            hashes = _mix(hashes, read(j, None))
        return hashes
    order = np.argsort(-counts, kind="stable")
    with_word = np.searchsorted(-counts[order], -np.arange(most), side="left")
    for j, k in enumerate(with_word):
        rows = order[:k]
        hashes[rows] = _mix(hashes[rows], read(j, rows))
    return hashes


def buckets_of(hashes: np.ndarray, num_buckets: int) -> np.ndarray:
    """Java's `Math.abs(hash % numBuckets)`: remainder truncated toward zero."""
    return np.abs(np.fmod(hashes.astype(np.int64), num_buckets)).astype(np.int32)


def check_bucket_function(schema: TableSchema) -> None:
    """Rows are bucketed by Paimon's default hash; other bucket functions are refused."""
    function = read_option(schema.options, BUCKET_FUNCTION_TYPE, str.lower, "default")
    if function != "default":
        raise InvalidOptionError(
            f"table option '{BUCKET_FUNCTION_TYPE}' is {function!r}: only Paimon's default "
            "hash bucket function is supported; unset the option"
        )


def fixed_bucket_count(schema: TableSchema) -> int:
    """The table's bucket count; tables whose buckets are not a pure hash are refused."""
    count = bucket(schema.options)
    if count == DYNAMIC_BUCKET:
        raise InvalidOptionError(
            "table option 'bucket' is -1 (dynamic bucket mode): its key-to-bucket index lives in "
            "index files that dagster-paimon does not maintain; create the table with 'bucket' "
            "set to a fixed count > 0"
        )
    if count == POSTPONE_BUCKET:
        raise InvalidOptionError(
            "table option 'bucket' is -2 (postpone bucket mode): its files wait in a postpone "
            "bucket for a rescale job dagster-paimon does not run; create the table with "
            "'bucket' set to a fixed count > 0"
        )
    check_bucket_function(schema)
    return count


def total_buckets(schema: TableSchema) -> int:
    """The totalBuckets a write records: the fixed count, or -1 for dynamic buckets (and for
    an unaware-bucket append table)."""
    if bucket(schema.options) == DYNAMIC_BUCKET:
        return DYNAMIC_BUCKET
    return fixed_bucket_count(schema)


def assign_buckets(
    schema: TableSchema, data: pa.Table | pa.RecordBatch, num_buckets: int | None = None
) -> np.ndarray:
    """The bucket of every row; `data` holds the bucket-key columns in the table's types.

    `num_buckets` overrides the table's count (a postpone partition's own count).
    """
    columns = [data.column(name) for name in schema.bucket_keys]
    return buckets_of(binary_row_hashes(columns), num_buckets or fixed_bucket_count(schema))
