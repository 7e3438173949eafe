"""The bitmap file index (BitmapFileIndex, formats V1 and V2), built from a file's values.

Each distinct non-null value maps to a roaring bitmap of the rows holding it; a value on a single
row is stored as offset -1 - row with no body, likewise the null rows. Bitmaps are run-optimized
and written in the portable roaring format (pyroaring's is the same). The dictionary and the
bitmap bodies are in value order (Java's writer follows its HashMap's iteration order; its
reader looks values up, so any order reads the same); V2 groups the dictionary into blocks of at
most `index-block-size` bytes behind a secondary index of each block's first value. Binary and
decimal columns are refused.
"""

from __future__ import annotations

import struct

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyroaring import BitMap

from dagster_paimon.errors import InvalidOptionError
from dagster_paimon.io.fileindex.values import (
    JavaType,
    byte_buffers,
    float_bits,
    integral_values,
    nulls,
)

BITMAP = "bitmap"
VERSION_1 = 1
VERSION_2 = 2
DEFAULT_VERSION = VERSION_2
DEFAULT_BLOCK_SIZE = 16 * 1024
SUPPORTED_KINDS = ("integral", "float", "boolean", "string")
_BE = {1: ">i1", 2: ">i2", 4: ">i4", 8: ">i8"}


def roaring_bytes(rows: np.ndarray) -> bytes:
    """RoaringBitmap32.serialize: the rows run-optimized, in the portable format."""
    bitmap = BitMap(rows.astype(np.uint32, copy=False))
    bitmap.run_optimize()
    return bitmap.serialize()


class _Dictionary:
    """A column's distinct non-null values, each present row's code into them, and what the index
    needs of each value: serialized bytes, sort order."""

    def __init__(self, column: pa.Array, jtype: JavaType, present: np.ndarray):
        self.jtype = jtype
        if jtype.kind == "string":
            encoded = pc.dictionary_encode(column.filter(pa.array(present)))
            self.codes = np.asarray(encoded.indices.to_numpy(zero_copy_only=False), np.int64)
            self.values = encoded.dictionary
            data, offsets = byte_buffers(self.values)
            self._data, self._offsets = data, offsets
            return
        if jtype.kind == "float":
            keys = float_bits(column, jtype.width)
        elif jtype.kind == "boolean":
            keys = np.asarray(pc.fill_null(column, False).to_numpy(zero_copy_only=False), np.int64)
        else:
            keys = integral_values(column, jtype)
        keys = keys[present]
        self.values, inverse = np.unique(keys, return_inverse=True)
        self.codes = inverse.reshape(-1)

    def __len__(self) -> int:
        return len(self.values)

    def value_bytes(self, index: int) -> bytes:
        """DataOutput bytes of one value: a string as its length and UTF-8 bytes."""
        if self.jtype.kind == "string":
            start, end = self._offsets[index], self._offsets[index + 1]
            return struct.pack(">i", end - start) + self._data[start:end].tobytes()
        return np.array([self.values[index]]).astype(_BE[self.jtype.width]).tobytes()

    def sorted_order(self) -> np.ndarray:
        """Distinct values in the order of BitmapFileIndexMetaV2.getComparator."""
        if self.jtype.kind == "string":
            return np.asarray(pc.sort_indices(self.values.cast(pa.large_binary())))
        keys = self.values
        if self.jtype.kind == "float":
            flip = np.int64(0x7FFFFFFF if self.jtype.width == 4 else 0x7FFFFFFFFFFFFFFF)
            keys = np.where(keys < 0, keys ^ flip, keys)
        return np.argsort(keys, kind="stable")


class BitmapWriter:
    """One column's bitmap index: slices are kept until the file is finished."""

    def __init__(
        self, jtype: JavaType, version: int = DEFAULT_VERSION, block_size: int = DEFAULT_BLOCK_SIZE
    ):
        if version not in (VERSION_1, VERSION_2):
            raise InvalidOptionError(f"invalid bitmap index version: {version}")
        self.jtype = jtype
        self.version = version
        self.block_size = block_size
        self.slices: list[pa.Array] = []

    def write(self, column: pa.Array) -> None:
        """Take the next rows of the file."""
        self.slices.append(column)

    def serialized(self) -> bytes:
        """The index of every row written, as BitmapFileIndex.Writer.serializedBytes."""
        column = pa.concat_arrays(self.slices) if self.slices else pa.array([], pa.null())
        row_count = len(column)
        null_mask = nulls(column)
        present = ~null_mask
        present_rows = np.flatnonzero(present)
        null_rows = np.flatnonzero(null_mask)
        values = _Dictionary(column, self.jtype, present) if present_rows.size else None
        count = len(values) if values is not None else 0

        null_bytes = roaring_bytes(null_rows)
        offsets = np.zeros(count, dtype=np.int64)
        lengths = np.full(count, -1, dtype=np.int64)
        bodies: list[bytes] = []
        cursor = len(null_bytes) if null_rows.size > 1 else 0
        if values is not None:
            order = values.sorted_order()
            by_code = np.argsort(values.codes, kind="stable")
            sizes = np.bincount(values.codes, minlength=count)
            starts = np.concatenate([[0], np.cumsum(sizes)])
            grouped = present_rows[by_code]
            for code in order:
                rows = grouped[starts[code] : starts[code + 1]]
                if rows.size == 1:
                    offsets[code] = -1 - int(rows[0])
                else:
                    body = roaring_bytes(rows)
                    bodies.append(body)
                    offsets[code] = cursor
                    lengths[code] = len(body)
                    cursor += len(body)
        else:
            order = np.zeros(0, dtype=np.int64)

        out = bytearray(struct.pack(">bii?", self.version, row_count, count, bool(null_rows.size)))
        if null_rows.size:
            null_offset = -1 - int(null_rows[0]) if null_rows.size == 1 else 0
            out += struct.pack(">i", null_offset)
            if self.version == VERSION_2:
                out += struct.pack(">i", len(null_bytes))
        if self.version == VERSION_1:
            if values is not None:  # no values, no entries
                for code in order:
                    out += values.value_bytes(code) + struct.pack(">i", offsets[code])
        else:
            out += self._blocks(values, offsets, lengths)
        if null_rows.size > 1:
            out += null_bytes
        for body in bodies:
            out += body
        return bytes(out)

    def _blocks(
        self, values: _Dictionary | None, offsets: np.ndarray, lengths: np.ndarray
    ) -> bytes:
        """V2's dictionary: block count, each block's first value and offset, the blocks' total
        size, then the blocks of (value, offset, length) entries sorted by value."""
        blocks: list[tuple[bytes, bytearray]] = []  # each block's first value, its entries
        if values is not None:
            block = bytearray(4)
            first = -1
            entries = 0
            for code in values.sorted_order():
                entry = values.value_bytes(code) + struct.pack(">ii", offsets[code], lengths[code])
                if first >= 0 and len(block) + len(entry) > self.block_size:
                    struct.pack_into(">i", block, 0, entries)
                    blocks.append((values.value_bytes(first), block))
                    block, first, entries = bytearray(4), -1, 0
                if len(block) + len(entry) > self.block_size:
                    raise InvalidOptionError(
                        f"a bitmap index entry of {len(entry)} bytes exceeds index-block-size "
                        f"{self.block_size}"
                    )
                if first < 0:
                    first = int(code)
                block += entry
                entries += 1
            struct.pack_into(">i", block, 0, entries)
            blocks.append((values.value_bytes(first), block))
        out = bytearray(struct.pack(">i", len(blocks)))
        position = 0
        for first_value, block in blocks:
            out += first_value + struct.pack(">i", position)
            position += len(block)
        out += struct.pack(">i", position)
        for _, block in blocks:
            out += block
        return bytes(out)
