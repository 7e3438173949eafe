"""Paimon's bucket of each row as a Spark expression, so bucketing never leaves the JVM.

Paimon hashes the BinaryRow of the bucket key with Murmur3 (seed 42) four bytes at a time and
folds in the byte length; Spark's `hash` of a binary value is the same function with the same
seed, and BinaryRows are a whole number of 8-byte words. So the BinaryRow bytes are built as a
Spark binary column (layout in `dagster_paimon.ingest.bucket`) and hashed by Spark: no Python
worker, no rows buffered beside one. Keys of other types (timestamps, floats, decimals wider
than 18 digits) return None here and are hashed by the Arrow UDF instead.
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_type

from dagster_paimon.ingest.bucket import HEADER_BITS, MAX_INLINE_BYTES

SLOT_BYTES = 8
_ZERO_BYTE = bytearray(1)


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


def bucket_column(
    columns: Sequence[Column], types: Sequence[pa.DataType], buckets: int
) -> Column | None:
    """`abs(hash(BinaryRow(key)) % buckets)` of every row, as Java's DefaultBucketFunction;
    None when a key type has no expression here. `types` are the table's Arrow types."""
    cast = [c.cast(from_arrow_type(t)) for c, t in zip(columns, types, strict=True)]
    null_words = (len(cast) + 63 + HEADER_BITS) // 64
    fixed_bytes = SLOT_BYTES * (null_words + len(cast))
    headers = [_long(0)] * null_words
    slots: list[Column] = []
    variable: list[Column] = []
    offset: Column = _long(fixed_bytes)
    for i, (column, t) in enumerate(zip(cast, types, strict=True)):
        bit = i + HEADER_BITS
        null_bit = F.when(column.isNull(), _long(1 << (bit % 64))).otherwise(_long(0))
        headers[bit // 64] = headers[bit // 64].bitwiseOR(null_bit)
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
    row = F.concat(
        *[_little_endian(h) for h in headers],
        *slots,
        *[F.coalesce(v, F.lit(bytearray())) for v in variable],
    )
    return F.abs(F.hash(row).cast("bigint") % F.lit(buckets)).cast("int")
