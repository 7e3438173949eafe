"""A reader of Paimon's index blobs written from Java's readers (FileIndexFormat.Reader,
BitmapFileIndexMeta(V2), BitSliceIndexRoaringBitmap.map, BloomFilterFileIndex.Reader), to check
what the indexes say about each row independently of how they were built."""

from __future__ import annotations

import struct

import numpy as np
from pyroaring import BitMap

from dagster_paimon.io.fileindex.bloom import fast_hash


class Cursor:
    """Big-endian DataInput over bytes."""

    def __init__(self, data: bytes, position: int = 0):
        self.data, self.position = data, position

    def take(self, fmt: str):
        values = struct.unpack_from(">" + fmt, self.data, self.position)
        self.position += struct.calcsize(">" + fmt)
        return values if len(values) > 1 else values[0]

    def utf(self) -> str:
        n = self.take("H")
        self.position += n
        return self.data[self.position - n : self.position].decode()

    def bitmap(self) -> BitMap:
        bitmap = BitMap.deserialize(self.data[self.position :])
        self.position += len(bitmap.serialize())
        return bitmap


def sections(blob: bytes) -> dict[tuple[str, str], bytes]:
    """(column, index type) -> index bytes of a FileIndexFormat blob."""
    c = Cursor(blob)
    magic, version, _, columns = c.take("qiii")
    assert (magic, version) == (1493475289347502, 1)
    out = {}
    for _ in range(columns):
        column = c.utf()
        for _ in range(c.take("i")):
            kind = c.utf()
            start, length = c.take("ii")
            out[(column, kind)] = blob[start : start + length]
    assert c.take("i") == 0
    return out


def _value(c: Cursor, fmt: str):
    if fmt == "s":
        n = c.take("i")
        c.position += n
        return c.data[c.position - n : c.position].decode()
    return c.take(fmt)


def bitmap_rows(data: bytes, fmt: str) -> tuple[int, dict, set[int]]:
    """(row count, value -> rows, null rows) of a bitmap index; fmt is the struct code of the
    values ('i', 'q', 'd', 'b', ...) or 's' for strings."""
    c = Cursor(data)
    version, rows, count, has_null = c.take("bii?")
    null_offset = c.take("i") if has_null else 0
    if version == 2 and has_null:
        c.take("i")
    entries = []
    if version == 1:
        entries = [(_value(c, fmt), c.take("i")) for _ in range(count)]
        body = c.position
    else:
        blocks = c.take("i")
        for _ in range(blocks):
            _value(c, fmt), c.take("i")
        total = c.take("i")
        start = c.position
        while c.position < start + total:
            for _ in range(c.take("i")):
                entries.append((_value(c, fmt), c.take("ii")[0]))
        body = c.position

    def rows_at(offset: int) -> set[int]:
        if offset < 0:
            return {-1 - offset}
        return set(Cursor(data, body + offset).bitmap())

    nulls = rows_at(null_offset) if has_null else set()
    return rows, {v: rows_at(o) for v, o in entries}, nulls


def _bsi_part(c: Cursor) -> dict[int, int]:
    assert c.take("b") == 1
    low, _high = c.take("qq")
    exists = c.bitmap()
    slices = [c.bitmap() for _ in range(c.take("i"))]
    return {r: low + sum(1 << i for i, s in enumerate(slices) if r in s) for r in exists}


def bsi_values(data: bytes) -> tuple[int, dict[int, int]]:
    """(row count, row -> value) of a bit-sliced index."""
    c = Cursor(data)
    assert c.take("b") == 1
    rows = c.take("i")
    values = _bsi_part(c) if c.take("?") else {}
    if c.take("?"):
        values.update({r: -v for r, v in _bsi_part(c).items()})
    return rows, values


def bloom_may_contain(data: bytes, column, jtype) -> np.ndarray:
    """Whether the bloom filter may hold each non-null value of an Arrow column."""
    k = struct.unpack_from(">i", data)[0]
    bits = np.unpackbits(np.frombuffer(data[4:], np.uint8), bitorder="little").astype(bool)
    hashes = fast_hash(column, jtype)
    h1 = hashes.astype(np.int32).astype(np.int64)
    h2 = (hashes >> 32).astype(np.int32).astype(np.int64)
    kept = np.ones(hashes.size, dtype=bool)
    for i in range(1, k + 1):
        combined = (h1 + i * h2).astype(np.int32)
        combined = np.where(combined < 0, ~combined, combined)
        kept &= bits[combined % bits.size]
    return kept
