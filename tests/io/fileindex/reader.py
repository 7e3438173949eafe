"""A reader of Paimon's index blobs written from Java's readers (FileIndexFormat.Reader,
BitmapFileIndexMeta(V2), BitSliceIndexRoaringBitmap.map, BloomFilterFileIndex.Reader,
RangeBitmap), to check
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


class RangeBitmap:
    """A range-bitmap index read as Java's readers read it (RangeBitmap, ChunkedDictionary with
    Fixed/VariableLengthChunk, BitSliceIndexBitmap), answering predicates as RangeBitmap does.

    fmt is the struct code of the keys ('i', 'q', 'h', 'b', 'f', 'd', '?') or 's' for strings
    (kept as bytes, which Python orders as BinaryString.compareTo does). Floats compare as
    Float.compare: -0.0 below 0.0, NaN above everything.
    """

    def __init__(self, data: bytes, fmt: str):
        self.fmt = fmt
        c = Cursor(data)
        header_length = c.take("i")
        start = c.position
        version, self.rid, self.cardinality = c.take("bii")
        assert version == 1
        if self.cardinality > 0:
            self.min, self.max = self._key(c), self._key(c)
        dictionary_length = c.take("i")
        assert c.position == start + header_length
        self.keys, self.chunks = self._dictionary(
            Cursor(data[: c.position + dictionary_length], c.position)
        )
        assert len(self.keys) == self.cardinality
        if self.cardinality:
            ends = [self.keys[0], self.keys[-1]]
            assert [self.order(k) for k in ends] == [self.order(self.min), self.order(self.max)]
        assert all(
            self.order(a) < self.order(b) for a, b in zip(self.keys, self.keys[1:], strict=False)
        )
        self.ebm, self.slices = self._bsi(Cursor(data, c.position + dictionary_length))

    def _key(self, c: Cursor):
        if self.fmt == "s":
            n = c.take("i")
            c.position += n
            return c.data[c.position - n : c.position]
        return c.take(self.fmt)

    def order(self, key):
        """The comparator's sort key."""
        if self.fmt in "fd":
            bits = struct.unpack(
                ">q" if self.fmt == "d" else ">i", struct.pack(">" + self.fmt, key)
            )[0]
            if key != key:
                return 1 << 64
            return bits ^ ((1 << (63 if self.fmt == "d" else 31)) - 1) if bits < 0 else bits
        return key

    def _dictionary(self, c: Cursor) -> tuple[list, list[tuple[int, int]]]:
        """Every key by code, and (first code, key count) of each chunk."""
        assert c.take("i") == 13
        version, size, offsets_length, chunks_length = c.take("biii")
        assert version == 1 and offsets_length == 4 * size
        offsets = [c.take("i") for _ in range(size)]
        chunks_start = c.position
        keys_start = chunks_start + chunks_length
        keys, chunks = [], []
        for offset in offsets:
            h = Cursor(c.data, chunks_start + offset)
            assert h.take("b") == 1
            head = self._key(h)
            code, key_offset, count = h.take("iii")
            assert code == len(keys)
            keys.append(head)
            chunks.append((code, count))
            if self.fmt == "s":
                within_length, keys_length = h.take("ii")
                assert within_length == 4 * count
                within = Cursor(c.data, keys_start + key_offset)
                base = keys_start + key_offset + within_length
                for _ in range(count):
                    keys.append(self._key(Cursor(c.data, base + within.take("i"))))
            else:
                keys_length, width = h.take("ii")
                assert keys_length == count * width == count * struct.calcsize(">" + self.fmt)
                body = Cursor(c.data, keys_start + key_offset)
                keys.extend(self._key(body) for _ in range(count))
        return keys, chunks

    def _bsi(self, c: Cursor) -> tuple[BitMap, list[BitMap]]:
        header_length = c.take("i")
        version, count, ebm_length, index_length = c.take("bbii")
        assert version == 1 and index_length == 8 * count
        assert header_length == 10 + index_length
        index = [c.take("ii") for _ in range(count)]
        body = c.position
        ebm = BitMap.deserialize(c.data[body : body + ebm_length])
        slices = [
            BitMap.deserialize(c.data[body + ebm_length + o : body + ebm_length + o + n])
            for o, n in index
        ]
        return ebm, slices

    def values(self) -> dict[int, object]:
        """row -> key of every non-null row."""
        return {
            r: self.keys[sum(1 << i for i, s in enumerate(self.slices) if r in s)] for r in self.ebm
        }

    def find(self, key) -> int:
        """Dictionary.find: the key's code, or -(insertion point) - 1."""
        low, high = 0, len(self.keys) - 1
        while low <= high:
            mid = (low + high) // 2
            if self.order(self.keys[mid]) < self.order(key):
                low = mid + 1
            elif self.order(self.keys[mid]) > self.order(key):
                high = mid - 1
            else:
                return mid
        return -(low + 1)

    def _bsi_gt(self, code: int) -> BitMap:
        """BitSliceIndexBitmap.gt (O'Neil's algorithm over the slices)."""
        if code < 0:
            return BitMap(self.ebm)
        state = None
        start = (~code & -~code).bit_length() - 1
        for i in range(start, len(self.slices)):
            if state is None:
                state = BitMap(self.slices[i])
            elif (code >> i) & 1:
                state &= self.slices[i]
            else:
                state |= self.slices[i]
        return (state & self.ebm) if state is not None else BitMap()

    def _bsi_eq(self, code: int) -> BitMap:
        state = BitMap(self.ebm)
        for i, s in enumerate(self.slices):
            state = state & s if (code >> i) & 1 else state - s
        return state

    def _not(self, bitmap: BitMap) -> BitMap:
        return BitMap(range(self.rid)) - bitmap & self.ebm

    def _compare(self, key) -> tuple[int, int]:
        def cmp(a, b):
            return (self.order(a) > self.order(b)) - (self.order(a) < self.order(b))

        return cmp(key, self.min), cmp(key, self.max)

    def is_null(self) -> BitMap:
        return BitMap(range(self.rid)) - self.ebm

    def eq(self, key) -> BitMap:
        if self.cardinality <= 0:
            return BitMap()
        lo, hi = self._compare(key)
        if lo == 0 and hi == 0:
            return BitMap(self.ebm)
        if lo < 0 or hi > 0:
            return BitMap()
        code = self.find(key)
        return BitMap() if code < 0 else self._bsi_eq(code)

    def gte(self, key) -> BitMap:
        if self.cardinality <= 0:
            return BitMap()
        lo, hi = self._compare(key)
        if lo <= 0:
            return BitMap(self.ebm)
        if hi > 0:
            return BitMap()
        code = self.find(key)
        return self._bsi_gt((-code - 1 if code < 0 else code) - 1)

    def gt(self, key) -> BitMap:
        if self.cardinality <= 0:
            return BitMap()
        lo, hi = self._compare(key)
        if lo < 0:
            return BitMap(self.ebm)
        if hi >= 0:
            return BitMap()
        code = self.find(key)
        return self._bsi_gt(-code - 2) if code < 0 else self._bsi_gt(code)

    def lt(self, key) -> BitMap:
        if self.cardinality <= 0:
            return BitMap()
        lo, hi = self._compare(key)
        if hi > 0:
            return BitMap(self.ebm)
        if lo <= 0:
            return BitMap()
        return self._not(self.gte(key))

    def lte(self, key) -> BitMap:
        if self.cardinality <= 0:
            return BitMap()
        lo, hi = self._compare(key)
        if hi >= 0:
            return BitMap(self.ebm)
        if lo < 0:
            return BitMap()
        return self._not(self.gt(key))

    def isin(self, keys) -> BitMap:
        out = BitMap()
        for key in keys:
            out |= self.eq(key)
        return out
