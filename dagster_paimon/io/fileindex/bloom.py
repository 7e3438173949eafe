"""The bloom-filter file index (BloomFilterFileIndex over BloomFilter64), built batch by batch.

Java hashes each non-null value to 64 bits (FastHash): integral, date, time, timestamp (millis
or micros) and float (its bits) values with Thomas Wang's 64-bit integer hash, strings and
binaries with XXH64 (seed 0) of their bytes; decimals and booleans are refused. Each hash sets
`k` bits: with h1 its low and h2 its high 32-bit half, bit `(h1 + i * h2) mod m` for i = 1..k,
the 32-bit sum bit-flipped when negative. The index is `k` (big-endian int) then the bit set,
bit j in byte j >> 3 at position j & 7.
"""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa

from dagster_paimon.io.fileindex.values import (
    JavaType,
    byte_buffers,
    float_bits,
    integral_values,
    nulls,
)

BLOOM_FILTER = "bloom-filter"
DEFAULT_ITEMS = 1_000_000
DEFAULT_FPP = 0.1
SUPPORTED_KINDS = ("integral", "float", "string", "binary")

_U64 = np.uint64
_MASK = (1 << 64) - 1
_P1, _P2 = 11400714785074694791, 14029467366897019727
P1 = _U64(_P1)
P2 = _U64(_P2)
P3 = _U64(1609587929392839161)
P4 = _U64(9650029242287828579)
P5 = _U64(2870177450012600261)
V1_START = _U64((_P1 + _P2) & _MASK)
V4_START = _U64(-_P1 & _MASK)


def wang_hash(keys: np.ndarray) -> np.ndarray:
    """Thomas Wang's 64-bit integer hash (FastHash.getLongHash) of int64 keys, with wraparound
    and arithmetic right shifts as Java's long arithmetic."""
    key = keys.astype(np.int64)
    key = ~key + (key << 21)
    key = key ^ (key >> 24)
    key = (key + (key << 3)) + (key << 8)
    key = key ^ (key >> 14)
    key = (key + (key << 2)) + (key << 4)
    key = key ^ (key >> 28)
    return key + (key << 31)


def _rotl(x: np.ndarray, r: int) -> np.ndarray:
    """64-bit rotate left."""
    return (x << _U64(r)) | (x >> _U64(64 - r))


def _round(acc: np.ndarray, lane: np.ndarray) -> np.ndarray:
    """XXH64's accumulator round."""
    return _rotl(acc + lane * P2, 31) * P1


def xxh64(data: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """XXH64 with seed 0 of each byte range data[offsets[i]:offsets[i + 1]], as int64.

    Vectorized over values: the loops run over 32-byte stripes and tail words, each step on the
    values long enough to have it, reading little-endian words through byte-strided views.
    """
    starts = offsets[:-1].astype(np.int64)
    lengths = (offsets[1:] - offsets[:-1]).astype(np.int64)
    n = len(starts)
    padded = np.concatenate([data.astype(np.uint8, copy=False), np.zeros(8, dtype=np.uint8)])
    words64 = np.ndarray((padded.size - 7,), dtype="<u8", buffer=padded, strides=(1,))
    words32 = np.ndarray((padded.size - 3,), dtype="<u4", buffer=padded, strides=(1,))
    h = np.full(n, P5, dtype=np.uint64)
    stripes = lengths // 32
    long_rows = np.flatnonzero(stripes > 0)
    if long_rows.size:
        base = starts[long_rows]
        v1 = np.full(long_rows.size, V1_START, dtype=np.uint64)
        v2 = np.full(long_rows.size, P2, dtype=np.uint64)
        v3 = np.zeros(long_rows.size, dtype=np.uint64)
        v4 = np.full(long_rows.size, V4_START, dtype=np.uint64)
        rows_stripes = stripes[long_rows]
        for s in range(int(rows_stripes.max())):
            live = np.flatnonzero(rows_stripes > s)
            at = base[live] + 32 * s
            v1[live] = _round(v1[live], words64[at])
            v2[live] = _round(v2[live], words64[at + 8])
            v3[live] = _round(v3[live], words64[at + 16])
            v4[live] = _round(v4[live], words64[at + 24])
        acc = _rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)
        for v in (v1, v2, v3, v4):
            acc = (acc ^ _round(np.zeros_like(v), v)) * P1 + P4
        h[long_rows] = acc
    h = h + lengths.astype(np.uint64)
    position = starts + 32 * stripes
    remaining = lengths - 32 * stripes
    for _ in range(3):
        live = np.flatnonzero(remaining >= 8)
        if not live.size:
            break
        k1 = _round(np.zeros(live.size, dtype=np.uint64), words64[position[live]])
        h[live] = _rotl(h[live] ^ k1, 27) * P1 + P4
        position[live] += 8
        remaining[live] -= 8
    live = np.flatnonzero(remaining >= 4)
    if live.size:
        word = words32[position[live]].astype(np.uint64)
        h[live] = _rotl(h[live] ^ (word * P1), 23) * P2 + P3
        position[live] += 4
        remaining[live] -= 4
    for _ in range(3):
        live = np.flatnonzero(remaining >= 1)
        if not live.size:
            break
        byte = padded[position[live]].astype(np.uint64)
        h[live] = _rotl(h[live] ^ (byte * P5), 11) * P1
        position[live] += 1
        remaining[live] -= 1
    h ^= h >> _U64(33)
    h *= P2
    h ^= h >> _U64(29)
    h *= P3
    h ^= h >> _U64(32)
    return h.view(np.int64)


def fast_hash(column: pa.Array, jtype: JavaType) -> np.ndarray:
    """FastHash of each non-null value of the column (nulls are skipped), as int64."""
    present = ~nulls(column)
    if jtype.kind in ("string", "binary"):
        data, offsets = byte_buffers(column)
        hashes = xxh64(data, offsets)
    elif jtype.kind == "float":
        hashes = wang_hash(float_bits(column, jtype.width))
    else:
        hashes = wang_hash(integral_values(column, jtype))
    return hashes[present]


def filter_shape(items: int, fpp: float) -> tuple[int, int]:
    """(bits, hash functions) of BloomFilter64(items, fpp): the bit count rounded up to the
    next whole byte, a whole extra byte when already aligned, as Java does."""
    nb = int(-items * math.log(fpp) / (math.log(2) * math.log(2)))
    bits = nb + (8 - nb % 8)
    hashes = max(1, math.floor(bits / items * math.log(2) + 0.5))
    return bits, hashes


class BloomFilterWriter:
    """One column's bloom filter, fed one Arrow slice at a time."""

    def __init__(self, jtype: JavaType, items: int = DEFAULT_ITEMS, fpp: float = DEFAULT_FPP):
        self.jtype = jtype
        self.num_bits, self.num_hashes = filter_shape(items, fpp)
        self.bits = np.zeros(self.num_bits, dtype=bool)

    def write(self, column: pa.Array) -> None:
        """Add every non-null value of the slice."""
        hashes = fast_hash(column, self.jtype)
        if not hashes.size:
            return
        h1 = hashes.astype(np.int32).astype(np.int64)
        h2 = (hashes >> 32).astype(np.int32).astype(np.int64)
        for i in range(1, self.num_hashes + 1):
            combined = (h1 + i * h2).astype(np.int32)
            combined = np.where(combined < 0, ~combined, combined)
            self.bits[combined % self.num_bits] = True

    def serialized(self) -> bytes:
        """k as a big-endian int, then the bit set bytes."""
        header = np.array([self.num_hashes], dtype=">i4").tobytes()
        return header + np.packbits(self.bits, bitorder="little").tobytes()
