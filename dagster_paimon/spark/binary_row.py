"""Paimon's bucket of each row as Spark expressions, so bucketing never leaves the JVM.

Paimon hashes the BinaryRow of the bucket key (layout in `dagster_paimon.lsm.write.bucket`) with
Murmur3 (seed 42) four bytes at a time and folds in the byte length. Keys of fixed-width types
fill a fixed number of 8-byte words, so the hash is unrolled over those words in 64-bit integer
arithmetic, kept to 32 bits by masks (ANSI mode forbids overflow): no bytes are built. Keys with
strings or binaries have a variable part, so their BinaryRow is built as a Spark binary and
hashed by Spark's `hash`, the same function with the same seed over whole words. Either way no
Python worker runs and no rows are buffered. Keys of other types (timestamps, floats, decimals
wider than 18 digits) get None here and are hashed by the Arrow UDF instead.
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_type

from dagster_paimon.lsm.write.bucket import HEADER_BITS, MAX_INLINE_BYTES

SLOT_BYTES = 8
_ZERO_BYTE = bytearray(1)
SEED = 42
_WORD_MASK = 0xFFFFFFFF
_C1, _C2, _N1 = 0xCC9E2D51, 0x1B873593, 0xE6546B64
_F1, _F2 = 0x85EBCA6B, 0xC2B2AE35


def _long(value: int) -> Column:
    return F.lit(value).cast("bigint")


def _little_endian(value: Column) -> Column:
    """The 8 little-endian bytes of a bigint, as BinaryRow stores a slot."""
    swapped = _long(0)
    for i in range(SLOT_BYTES):
        byte = F.shiftright(value, 8 * i).bitwiseAND(_long(0xFF))
        swapped = swapped.bitwiseOR(F.shiftleft(byte, 8 * (SLOT_BYTES - 1 - i)))
    return F.unhex(F.lpad(F.hex(swapped), 2 * SLOT_BYTES, "0"))


def _padded(data: Column, length: Column | int) -> Column:
    """Bytes padded with zero bytes to a length."""
    size = F.lit(length) if isinstance(length, int) else length
    return F.call_function("rpad", data, size, F.lit(_ZERO_BYTE))


def _fixed_slot(column: Column, t: pa.DataType) -> Column | None:
    """The slot value (a bigint) of a fixed-width key in the table's type; None if not one."""
    if pa.types.is_boolean(t):
        return F.when(column, _long(1)).otherwise(_long(0))
    if pa.types.is_integer(t) and pa.types.is_signed_integer(t):
        value = column.cast("bigint")
        if t.bit_width == 64:
            return value
        return value.bitwiseAND(_long((1 << t.bit_width) - 1))
    if pa.types.is_date32(t):
        return F.unix_date(column).cast("bigint").bitwiseAND(_long(0xFFFFFFFF))
    if pa.types.is_decimal(t) and t.precision <= 18:
        unscaled = column * F.lit(10**t.scale).cast(f"decimal({t.scale + 1},0)")
        return unscaled.cast("bigint")
    return None


def _is_bytes(t: pa.DataType) -> bool:
    return pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t)


def with_bucket_column(
    df: DataFrame,
    name: str,
    columns: Sequence[Column],
    types: Sequence[pa.DataType],
    buckets: int,
) -> DataFrame | None:
    """`df` with column `name`: `abs(hash(BinaryRow(key)) % buckets)` of every row, as Java's
    DefaultBucketFunction; None when a key type has no expression here. `types` are the
    table's Arrow types."""
    cast = [c.cast(from_arrow_type(t)) for c, t in zip(columns, types, strict=True)]
    headers = _null_words(cast)
    if any(_is_bytes(t) for t in types):
        row = _binary_row(cast, types, headers)
        if row is None:
            return None
        return df.withColumn(name, F.abs(F.hash(row).cast("bigint") % F.lit(buckets)).cast("int"))
    slots = [_fixed_slot(c, t) for c, t in zip(cast, types, strict=True)]
    if any(s is None for s in slots):
        return None
    words = [*headers, *[F.coalesce(s, _long(0)) for s in slots if s is not None]]
    return _murmur_bucket(df, name, words, buckets)


def _null_words(columns: Sequence[Column]) -> list[Column]:
    """The BinaryRow header as 8-byte words (bigints): row kind 0, then a bit per null field."""
    headers = [_long(0)] * ((len(columns) + 63 + HEADER_BITS) // 64)
    for i, column in enumerate(columns):
        bit = i + HEADER_BITS
        null_bit = F.when(column.isNull(), _long(1 << (bit % 64))).otherwise(_long(0))
        headers[bit // 64] = headers[bit // 64].bitwiseOR(null_bit)
    return headers


def _binary_row(
    columns: Sequence[Column], types: Sequence[pa.DataType], headers: list[Column]
) -> Column | None:
    """The BinaryRow bytes of keys with strings or binaries; None if a type has no slot here."""
    fixed_bytes = SLOT_BYTES * (len(headers) + len(columns))
    slots: list[Column] = []
    variable: list[Column] = []
    offset: Column = _long(fixed_bytes)
    for column, t in zip(columns, types, strict=True):
        if _is_bytes(t):
            data = F.encode(column, "UTF-8") if not pa.types.is_binary(t) else column
            size = F.octet_length(data).cast("bigint")
            marker = F.unhex(F.hex(size.bitwiseOR(_long(0x80))))
            inline = F.concat(_padded(data, MAX_INLINE_BYTES), marker)
            spilled = size > MAX_INLINE_BYTES
            slot = F.when(spilled, _little_endian(F.shiftleft(offset, 32).bitwiseOR(size)))
            slots.append(F.coalesce(slot.otherwise(inline), _little_endian(_long(0))))
            padded = F.floor((size + 7) / 8).cast("bigint") * SLOT_BYTES  # bytes, whole words
            variable.append(
                F.when(spilled, _padded(data, padded.cast("int"))).otherwise(F.lit(bytearray()))
            )
            offset = offset + F.when(spilled, padded).otherwise(_long(0))
            continue
        value = _fixed_slot(column, t)
        if value is None:
            return None
        slots.append(_little_endian(F.coalesce(value, _long(0))))
    return F.concat(
        *[_little_endian(h) for h in headers],
        *slots,
        *[F.coalesce(v, F.lit(bytearray())) for v in variable],
    )


def _mul32(a: Column, c: int) -> Column:
    """`a * c` modulo 2^32 for `a` below 2^32: each product of `a` with a 16-bit half of the
    constant stays below 2^48, so no bigint overflows."""
    low = a * _long(c & 0xFFFF)
    high = F.shiftleft((a * _long(c >> 16)).bitwiseAND(_long(0xFFFF)), 16)
    return (low + high).bitwiseAND(_long(_WORD_MASK))


def _rotl32(x: Column, r: int) -> Column:
    """A 32-bit word rotated left by `r` bits."""
    left = F.shiftleft(x, r).bitwiseAND(_long(_WORD_MASK))
    return left.bitwiseOR(F.shiftrightunsigned(x, 32 - r))


def _mixed(h: Column, word: Column) -> Column:
    """One Murmur3 round: the running hash `h` with the 32-bit `word` mixed in."""
    k = _mul32(_rotl32(_mul32(word, _C1), 15), _C2)
    h = _rotl32(h.bitwiseXOR(k), 13)
    return (h * _long(5) + _long(_N1)).bitwiseAND(_long(_WORD_MASK))


def _xor_shifted(h: Column, shift: int) -> Column:
    """`h ^ (h >>> shift)`, a step of Murmur3's final avalanche."""
    return h.bitwiseXOR(F.shiftrightunsigned(h, shift))


def _murmur_bucket(df: DataFrame, name: str, slots: Sequence[Column], buckets: int) -> DataFrame:
    """`df` with the bucket of the BinaryRow made of these 8-byte words (bigints).

    The running hash is a column of its own after each slot: every step reads it more than
    once, and one nested expression would repeat each earlier step that many times over.
    """
    state = f"{name}_murmur"
    h = F.col(state)
    out = df.withColumn(state, _long(SEED))
    for slot in slots:
        low = slot.bitwiseAND(_long(_WORD_MASK))
        high = F.shiftrightunsigned(slot, 32)
        out = out.withColumn(state, _mixed(_mixed(h, low), high))
    length = h.bitwiseXOR(_long(SLOT_BYTES * len(slots)))
    out = out.withColumn(state, _mul32(_xor_shifted(length, 16), _F1))
    out = out.withColumn(state, _xor_shifted(_mul32(_xor_shifted(h, 13), _F2), 16))
    signed = F.when(h >= _long(1 << 31), h - _long(1 << 32)).otherwise(h)  # Java's int
    return out.withColumn(name, F.abs(signed % _long(buckets)).cast("int")).drop(state)
