"""Java's HashMap iteration order and hash codes: the order Paimon's index writers emit entries.

Paimon's FileIndexFormat header, and a bitmap index's value dictionary (and its bitmap bodies),
follow the iteration order of `java.util.HashMap`s. Iteration walks the table bin by bin; a bin
holds its keys in insertion order when filled by `put` and newest first when filled by
`computeIfAbsent`, which inserts at the bin's head. Resizing splits bins keeping that relative
order. The table has 16 bins, doubling once more than 3/4 full: after an insertion for `put`, at
the start of the next call for `computeIfAbsent`. A bin reaching 8 keys grows the table while
it has fewer than 64 bins, else turns into a red-black tree whose list order we do not model
(`exact` is then False; the index stays valid, its bytes may differ from Java's).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

log = logging.getLogger(__name__)

INITIAL_CAPACITY = 16
TREEIFY_THRESHOLD = 8
MIN_TREEIFY_CAPACITY = 64


@dataclass(frozen=True)
class Order:
    """Where each inserted key comes when the map is iterated, and whether that is certain."""

    indices: np.ndarray
    exact: bool


def string_hash(text: str) -> int:
    """Java's String.hashCode over UTF-16 code units, as a signed 32-bit int."""
    h = 0
    units = text.encode("utf-16-be")
    for i in range(0, len(units), 2):
        h = (31 * h + (units[i] << 8 | units[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def long_hash(values: np.ndarray) -> np.ndarray:
    """Java's Long.hashCode: the two halves xor-ed, as int32."""
    v = values.astype(np.int64).view(np.uint64)
    return (v ^ (v >> np.uint64(32))).astype(np.uint32).view(np.int32)


def _spread(hashes: np.ndarray) -> np.ndarray:
    """HashMap.hash: the high half folded into the low half (uint32)."""
    h = np.asarray(hashes).astype(np.int64).astype(np.uint32)
    return h ^ (h >> np.uint32(16))


def _capacity(size: int) -> int:
    """Bins of a table that has grown to hold `size` keys (more than 3/4 full grows it)."""
    capacity = INITIAL_CAPACITY
    while size > capacity * 3 // 4:
        capacity *= 2
    return capacity


def iteration_order(
    hashes: np.ndarray, *, head_insert: bool, calls_after_last: bool = False
) -> Order:
    """The order a HashMap iterates keys inserted in index order with these hash codes.

    `head_insert` is `computeIfAbsent` (False: `put`); `calls_after_last` says a further
    `computeIfAbsent` call (of a present key) followed the last insertion, which grows a table
    left more than 3/4 full.
    """
    n = len(hashes)
    if n == 0:
        return Order(np.zeros(0, dtype=np.int64), True)
    spread = _spread(hashes)
    final = _capacity(n if calls_after_last else n - 1) if head_insert else _capacity(n)
    # Fast path: no bin ever reaches the treeify threshold, so no early growth, no trees.
    inserted = 0
    capacity = INITIAL_CAPACITY
    regular = True
    while True:
        # keys inserted while the table has `capacity` bins
        upto = min(n, capacity * 3 // 4 + 1)
        if capacity == final:
            upto = n
        counts = np.bincount(spread[:upto] & np.uint32(capacity - 1), minlength=capacity)
        if counts.max() >= TREEIFY_THRESHOLD:
            regular = False
            break
        inserted = upto
        if inserted >= n or capacity >= final:
            break
        capacity *= 2
    if regular:
        bins = spread & np.uint32(final - 1)
        rank = -np.arange(n) if head_insert else np.arange(n)
        return Order(np.lexsort((rank, bins)), True)
    return _simulate(spread, head_insert=head_insert, calls_after_last=calls_after_last)


def _simulate(spread: np.ndarray, *, head_insert: bool, calls_after_last: bool) -> Order:
    """Insertion by insertion, for maps where some bin reaches the treeify threshold."""
    capacity = INITIAL_CAPACITY
    bins: list[list[int]] = [[] for _ in range(capacity)]
    exact = True

    def grow() -> None:
        nonlocal capacity, bins
        capacity *= 2
        grown: list[list[int]] = [[] for _ in range(capacity)]
        for chain in bins:
            for key in chain:
                grown[int(spread[key]) & (capacity - 1)].append(key)
        bins = grown

    size = 0
    for key in range(len(spread)):
        if head_insert and size > capacity * 3 // 4:
            grow()
        chain = bins[int(spread[key]) & (capacity - 1)]
        before = len(chain)
        if head_insert:
            chain.insert(0, key)
        else:
            chain.append(key)
        if before >= TREEIFY_THRESHOLD - (1 if head_insert else 0):
            if capacity < MIN_TREEIFY_CAPACITY:
                grow()
            else:
                exact = False
        size += 1
        if not head_insert and size > capacity * 3 // 4:
            grow()
    if head_insert and calls_after_last and size > capacity * 3 // 4:
        grow()
    if not exact:
        log.debug("a HashMap bin turned into a tree; entry order may differ from Java's")
    order = [key for chain in bins for key in chain]
    return Order(np.asarray(order, dtype=np.int64), exact)


_C1 = np.uint32(0xCC9E2D51)
_C2 = np.uint32(0x1B873593)
_N1 = np.uint32(0xE6546B64)


def _mix_k1(k: np.ndarray) -> np.ndarray:
    """Murmur3's word scramble (uint32)."""
    k = k * _C1
    k = (k << np.uint32(15)) | (k >> np.uint32(17))
    return k * _C2


def _mix_h1(h: np.ndarray, k: np.ndarray) -> np.ndarray:
    """Murmur3's running-hash step (uint32)."""
    h = h ^ k
    h = (h << np.uint32(13)) | (h >> np.uint32(19))
    return h * np.uint32(5) + _N1


def binary_string_hash(data: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """BinaryString.hashCode of each byte range: Murmur3 (seed 42) over little-endian words,
    then each trailing byte as a sign-extended int (MurmurHashUtils.hashBytes), as int32."""
    starts = offsets[:-1].astype(np.int64)
    lengths = (offsets[1:] - offsets[:-1]).astype(np.int64)
    padded = np.concatenate([data.astype(np.uint8, copy=False), np.zeros(4, dtype=np.uint8)])
    words = np.ndarray((padded.size - 3,), dtype="<u4", buffer=padded, strides=(1,))
    h = np.full(len(starts), 42, dtype=np.uint32)
    aligned = lengths // 4
    for j in range(int(aligned.max(initial=0))):
        live = np.flatnonzero(aligned > j)
        h[live] = _mix_h1(h[live], _mix_k1(words[starts[live] + 4 * j]))
    for t in range(3):
        live = np.flatnonzero(lengths - 4 * aligned > t)
        if not live.size:
            break
        byte = padded[starts[live] + 4 * aligned[live] + t].view(np.int8).astype(np.int32)
        h[live] = _mix_h1(h[live], _mix_k1(byte.view(np.uint32)))
    h ^= lengths.astype(np.uint32)
    h ^= h >> np.uint32(16)
    h *= np.uint32(0x85EBCA6B)
    h ^= h >> np.uint32(13)
    h *= np.uint32(0xC2B2AE35)
    h ^= h >> np.uint32(16)
    return h.view(np.int32)
