"""Column values as Paimon's Java index writers see them: the Java type of each Paimon type.

An index writer gets each row's value as Paimon's internal object: Byte, Short, Integer or Long
for integral types, dates (days) and times (millis of day); Float or Double; BinaryString (UTF-8
bytes) or byte[]; a Timestamp, which the indexes reduce to epoch millis (precision <= 3) or
micros; a Decimal. Here a whole Arrow column is turned into one numpy array of those values.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dagster_paimon.format.schema import AtomicType, DataType

INTEGRAL_BYTES = {"TINYINT": 1, "SMALLINT": 2, "INT": 4, "INTEGER": 4, "BIGINT": 8}
STRINGS = {"CHAR", "VARCHAR", "STRING"}
BINARIES = {"BINARY", "VARBINARY", "BYTES"}
TIMESTAMPS = {"TIMESTAMP", "TIMESTAMP_LTZ"}
DEFAULT_TIMESTAMP_PRECISION = 6
FLOAT_NAN_BITS = 0x7FC00000
DOUBLE_NAN_BITS = 0x7FF8000000000000
_UNIT_PER_SECOND = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}


@dataclass(frozen=True)
class JavaType:
    """What an index writer receives for a column: its Java kind and, for numbers, width.

    kind is one of "integral" (width 1, 2, 4 or 8 bytes: byte, short, int, long; dates and
    times are ints, timestamps longs after reduction), "float" (width 4 or 8), "boolean",
    "string", "binary", "decimal" (precision, scale) or "other".
    """

    root: str
    kind: str
    width: int = 0
    precision: int = 0
    scale: int = 0


def java_type(data_type: DataType) -> JavaType:
    """The Java kind of a Paimon column type."""
    if not isinstance(data_type, AtomicType):
        return JavaType(type(data_type).__name__.replace("Type", "").upper(), "other")
    text = data_type.type.upper()
    root = text.split("(")[0].split()[0]
    if root == "TIMESTAMP" and "LOCAL TIME ZONE" in text:
        root = "TIMESTAMP_LTZ"
    if root in INTEGRAL_BYTES:
        return JavaType(root, "integral", INTEGRAL_BYTES[root])
    if root in ("DATE", "TIME"):
        return JavaType(root, "integral", 4)
    if root in TIMESTAMPS:
        match = re.search(r"\((\d+)\)", text)
        precision = int(match.group(1)) if match else DEFAULT_TIMESTAMP_PRECISION
        return JavaType(root, "integral", 8, precision=precision)
    if root == "FLOAT":
        return JavaType(root, "float", 4)
    if root == "DOUBLE":
        return JavaType(root, "float", 8)
    if root == "BOOLEAN":
        return JavaType(root, "boolean", 1)
    if root in STRINGS:
        return JavaType(root, "string")
    if root in BINARIES:
        return JavaType(root, "binary")
    if root == "DECIMAL":
        match = re.search(r"\((\d+)\s*(?:,\s*(\d+))?\)", text)
        precision = int(match.group(1)) if match else 10
        scale = int(match.group(2) or 0) if match else 0
        return JavaType(root, "decimal", precision=precision, scale=scale)
    return JavaType(root, "other")


def integral_values(column: pa.Array, jtype: JavaType) -> np.ndarray:
    """int64 values (nulls as 0) of an integral, date, time or timestamp column.

    Timestamps become epoch millis for precision <= 3, else epoch micros, floored as Java's
    Timestamp.getMillisecond / toMicros do.
    """
    if pa.types.is_timestamp(column.type):
        unit = _UNIT_PER_SECOND[column.type.unit]
        target = 1_000 if jtype.precision <= 3 else 1_000_000
        raw = _filled(column.cast(pa.int64()), 0).astype(np.int64)
        if unit >= target:
            return np.floor_divide(raw, unit // target)
        return raw * (target // unit)
    if pa.types.is_date(column.type) or pa.types.is_time(column.type):
        storage = pa.int32() if column.type.bit_width == 32 else pa.int64()
        return _filled(column.view(storage), 0).astype(np.int64)
    return _filled(column, 0).astype(np.int64)


def float_bits(column: pa.Array, width: int) -> np.ndarray:
    """Float.floatToIntBits / Double.doubleToLongBits of each value (one NaN), as int64."""
    if width == 4:
        values = _filled(column.cast(pa.float32()), 0).astype(np.float32)
        bits = values.view(np.int32).astype(np.int64)
        return np.where(np.isnan(values), FLOAT_NAN_BITS, bits)
    values = _filled(column.cast(pa.float64()), 0).astype(np.float64)
    return np.where(np.isnan(values), DOUBLE_NAN_BITS, values.view(np.int64))


def decimal_unscaled(column: pa.Array, jtype: JavaType) -> np.ndarray:
    """Decimal.toUnscaledLong of each value (nulls as 0), for precision <= 18.

    A decimal128 value is its unscaled integer in 16 little-endian bytes; below 19 digits it
    fits the low 8.
    """
    column = column.cast(pa.decimal128(max(jtype.precision, 1), jtype.scale))
    words = np.frombuffer(column.buffers()[1], dtype="<i8")
    values = words[2 * column.offset : 2 * (column.offset + len(column)) : 2].astype(np.int64)
    return np.where(nulls(column), 0, values)


def byte_buffers(column: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """The bytes of a string or binary column: one data buffer and n + 1 int64 offsets."""
    if pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
        column = column.cast(pa.large_string())
    else:
        column = column.cast(pa.large_binary())
    buffers = column.buffers()
    offsets = np.frombuffer(buffers[1], dtype=np.int64)[
        column.offset : column.offset + len(column) + 1
    ]
    data = np.frombuffer(buffers[2] or b"", dtype=np.uint8)
    return data, offsets


def nulls(column: pa.Array) -> np.ndarray:
    """A boolean mask of the null rows."""
    if column.null_count == 0:
        return np.zeros(len(column), dtype=bool)
    return np.asarray(column.is_null())


def _filled(column: pa.Array, fill: object) -> np.ndarray:
    """The values as numpy with nulls replaced."""
    if column.null_count:
        column = pc.fill_null(column, pa.scalar(fill, column.type))
    return np.asarray(column.to_numpy(zero_copy_only=False))
