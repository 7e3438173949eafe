"""The bitmap file index (BitmapFileIndex, formats V1 and V2), built from a file's values.

Java maps each distinct non-null value to a roaring bitmap of the rows holding it, in a HashMap
whose iteration order (javamap) orders the dictionary and the bitmap bodies; a value on a single
row is stored as offset -1 - row with no body, likewise the null rows. Bitmaps are run-optimized
and written in the portable roaring format (pyroaring's is the same). V1's dictionary is that
map order; V2 sorts it by value into blocks of at most `index-block-size` bytes behind a
secondary index of each block's first value. Binary and decimal columns are refused.
"""

from __future__ import annotations

import struct

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyroaring import BitMap

from dagster_paimon.errors import InvalidOptionError
from dagster_paimon.io.fileindex.javamap import binary_string_hash, iteration_order, long_hash
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
    """A column's distinct non-null values in first-occurrence order, with what Java needs of
    each: hash code, serialized bytes, sort order."""

    def __init__(self, column: pa.Array, jtype: JavaType, present: np.ndarray):
        self.jtype = jtype
        if jtype.kind == "string":
            encoded = pc.dictionary_encode(column.filter(pa.array(present)))
            self.codes = np.asarray(encoded.indices.to_numpy(zero_copy_only=False), np.int64)
            self.values = encoded.dictionary
            data, offsets = byte_buffers(self.values)
            self.hashes = binary_string_hash(data, offsets)
            self._data, self._offsets = data, offsets
            self.sizes = 4 + (offsets[1:] - offsets[:-1])
            return
        if jtype.kind == "float":
            keys = float_bits(column, jtype.width)
        elif jtype.kind == "boolean":
            keys = np.asarray(pc.fill_null(column, False).to_numpy(zero_copy_only=False), np.int64)
        else:
            keys = integral_values(column, jtype)
        keys = keys[present]
        distinct, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
        by_first = np.argsort(first, kind="stable")
        rank = np.empty_like(by_first)
        rank[by_first] = np.arange(by_first.size)
        self.codes = rank[inverse.reshape(-1)]
        self.values = distinct[by_first]
        if jtype.kind == "boolean":
            self.hashes = np.where(self.values == 1, 1231, 1237).astype(np.int32)
        elif jtype.width == 8:
            self.hashes = long_hash(self.values)
        else:
            self.hashes = self.values.astype(np.int32)
        self.sizes = np.full(self.values.size, jtype.width, dtype=np.int64)

    def __len__(self) -> int:
        return len(self.hashes)

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
            last_row_first = int(present_rows[np.flatnonzero(values.codes == count - 1)[0]])
            ranks = np.empty(count, dtype=np.int64)
            ranks[values.sorted_order()] = np.arange(count)
            order = iteration_order(
                values.hashes,
                head_insert=True,
                calls_after_last=bool(present_rows[-1] > last_row_first),
                ranks=ranks,
            ).indices
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
