"""The bit-sliced index (BitSliceIndexBitmapFileIndex), built from a file's values.

Values become longs (integral, date, time, timestamp millis/micros, decimal unscaled); the
non-negative ones and the absolute values of the negative ones each form a bit-sliced bitmap:
an existence bitmap of their rows and one roaring bitmap per bit of the values. Java's collector
starts min and max at 0, so min is always 0 and the slices cover bits 0 .. bit_length(max) - 1.
"""

from __future__ import annotations

import struct

import numpy as np
import pyarrow as pa

from dagster_paimon.errors import SchemaMismatchError
from dagster_paimon.io.fileindex.bitmap import roaring_bytes
from dagster_paimon.io.fileindex.values import JavaType, decimal_unscaled, integral_values, nulls

BSI = "bsi"
VERSION_1 = 1
MAX_DECIMAL_PRECISION = 18
SUPPORTED_KINDS = ("integral", "decimal")


def _slices(rows: np.ndarray, values: np.ndarray) -> bytes:
    """BitSliceIndexRoaringBitmap.Appender(0, max(values)).serialize of these rows' values."""
    high = int(values.max()) if values.size else 0
    out = bytearray(struct.pack(">bqq", VERSION_1, 0, high))
    out += roaring_bytes(rows)
    out += struct.pack(">i", high.bit_length())
    for bit in range(high.bit_length()):
        out += roaring_bytes(rows[(values >> bit) & 1 == 1])
    return bytes(out)


class BsiWriter:
    """One column's bit-sliced index: values are kept until the file is finished."""

    def __init__(self, jtype: JavaType):
        self.jtype = jtype
        self.values: list[np.ndarray] = []
        self.nulls: list[np.ndarray] = []

    def write(self, column: pa.Array) -> None:
        """Take the next rows of the file."""
        if self.jtype.kind == "decimal":
            self.values.append(decimal_unscaled(column, self.jtype))
        else:
            self.values.append(integral_values(column, self.jtype))
        self.nulls.append(nulls(column))

    def serialized(self) -> bytes:
        """The index of every row written, as BitSliceIndexBitmapFileIndex.Writer does."""
        values = np.concatenate(self.values) if self.values else np.zeros(0, np.int64)
        null_mask = np.concatenate(self.nulls) if self.nulls else np.zeros(0, bool)
        if np.any((values == np.iinfo(np.int64).min) & ~null_mask):
            raise SchemaMismatchError(
                "a bsi index cannot hold Long.MIN_VALUE (Java's writer fails too)"
            )
        rows = np.arange(values.size, dtype=np.int64)
        positive = ~null_mask & (values >= 0)
        negative = ~null_mask & (values < 0)
        out = bytearray(struct.pack(">bi", VERSION_1, values.size))
        for part, magnitudes in ((positive, values), (negative, -values)):
            out += struct.pack(">?", bool(part.any()))
            if part.any():
                out += _slices(rows[part], magnitudes[part])
        return bytes(out)
