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

import itertools
import logging
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

log = logging.getLogger(__name__)

INITIAL_CAPACITY = 16
TREEIFY_THRESHOLD = 8
MIN_TREEIFY_CAPACITY = 64
UNTREEIFY_THRESHOLD = 6


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


def string_ranks(keys: Sequence[str]) -> np.ndarray:
    """Each string's place in String.compareTo order (UTF-16 code units)."""
    order = sorted(range(len(keys)), key=lambda i: keys[i].encode("utf-16-be"))
    ranks = np.empty(len(keys), dtype=np.int64)
    ranks[order] = np.arange(len(keys))
    return ranks


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
    hashes: np.ndarray,
    *,
    head_insert: bool,
    calls_after_last: bool = False,
    ranks: np.ndarray | None = None,
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
    return _simulate(spread, ranks, head_insert=head_insert, calls_after_last=calls_after_last)


class _Node:
    """A HashMap node; tree fields are used once its bin is a red-black tree."""

    __slots__ = ("hash", "key", "left", "next", "parent", "prev", "rank", "red", "right")

    def __init__(self, key: int, hash_: int, rank: int):
        self.key, self.hash, self.rank = key, hash_, rank
        self.next: _Node | None = None
        self.prev: _Node | None = None
        self.left: _Node | None = None
        self.right: _Node | None = None
        self.parent: _Node | None = None
        self.red = False


def _direction(x: _Node, p: _Node) -> int:
    """Where key x goes below node p: by hash (signed), then compareTo (keys are distinct)."""
    if p.hash != x.hash:
        return -1 if p.hash > x.hash else 1
    return -1 if x.rank < p.rank else 1


def _rotate_left(root: _Node, p: _Node) -> _Node:
    r = p.right
    if r is None:
        return root
    p.right = r.left
    if r.left is not None:
        r.left.parent = p
    r.parent = p.parent
    if p.parent is None:
        root = r
        r.red = False
    elif p.parent.left is p:
        p.parent.left = r
    else:
        p.parent.right = r
    r.left = p
    p.parent = r
    return root


def _rotate_right(root: _Node, p: _Node) -> _Node:
    left = p.left
    if left is None:
        return root
    p.left = left.right
    if left.right is not None:
        left.right.parent = p
    left.parent = p.parent
    if p.parent is None:
        root = left
        left.red = False
    elif p.parent.right is p:
        p.parent.right = left
    else:
        p.parent.left = left
    left.right = p
    p.parent = left
    return root


def _balance_insertion(root: _Node, x: _Node) -> _Node:
    """HashMap.TreeNode.balanceInsertion."""
    x.red = True
    while True:
        xp = x.parent
        if xp is None:
            x.red = False
            return x
        xpp = xp.parent
        if not xp.red or xpp is None:
            return root
        if xp is xpp.left:
            uncle = xpp.right
            if uncle is not None and uncle.red:
                uncle.red = xp.red = False
                xpp.red = True
                x = xpp
                continue
            if x is xp.right:
                x = xp
                root = _rotate_left(root, x)
                xp = x.parent
                xpp = xp.parent if xp is not None else None
            if xp is not None:
                xp.red = False
                if xpp is not None:
                    xpp.red = True
                    root = _rotate_right(root, xpp)
        else:
            uncle = xpp.left
            if uncle is not None and uncle.red:
                uncle.red = xp.red = False
                xpp.red = True
                x = xpp
                continue
            if x is xp.left:
                x = xp
                root = _rotate_right(root, x)
                xp = x.parent
                xpp = xp.parent if xp is not None else None
            if xp is not None:
                xp.red = False
                if xpp is not None:
                    xpp.red = True
                    root = _rotate_left(root, xpp)


class _Map:
    """java.util.HashMap's bins as linked lists, bins of 8 or more as red-black trees (JDK 8+):
    enough of it to know the iteration order after a sequence of insertions."""

    def __init__(self) -> None:
        self.capacity = INITIAL_CAPACITY
        self.bins: list[_Node | None] = [None] * self.capacity
        self.trees: set[int] = set()
        self.size = 0

    def _chain(self, first: _Node | None) -> list[_Node]:
        out = []
        while first is not None:
            out.append(first)
            first = first.next
        return out

    def _link(self, nodes: list[_Node]) -> _Node | None:
        for a, b in itertools.pairwise(nodes):
            a.next, b.prev = b, a
        if nodes:
            nodes[0].prev = None
            nodes[-1].next = None
        return nodes[0] if nodes else None

    def _move_root_to_front(self, index: int, root: _Node) -> None:
        nodes = self._chain(self.bins[index])
        if nodes[0] is not root:
            nodes.remove(root)
            nodes.insert(0, root)
            self.bins[index] = self._link(nodes)

    def _treeify(self, index: int) -> None:
        """TreeNode.treeify: insert the bin's nodes in list order, then move the root first."""
        root: _Node | None = None
        for x in self._chain(self.bins[index]):
            x.left = x.right = None
            if root is None:
                x.parent, x.red, root = None, False, x
                continue
            p = root
            while True:
                d = _direction(x, p)
                child = p.left if d <= 0 else p.right
                if child is None:
                    x.parent = p
                    if d <= 0:
                        p.left = x
                    else:
                        p.right = x
                    root = _balance_insertion(root, x)
                    break
                p = child
        assert root is not None, "only a bin that reached TREEIFY_THRESHOLD is treeified"
        self.trees.add(index)
        self._move_root_to_front(index, root)

    def _root(self, index: int) -> _Node:
        node = self.bins[index]
        assert node is not None, "a tree bin is never empty"
        while node.parent is not None:
            node = node.parent
        return node

    def _put_tree(self, index: int, x: _Node) -> None:
        """TreeNode.putTreeVal: below its tree parent, and right after it in the list."""
        root = self._root(index)
        p = root
        while True:
            d = _direction(x, p)
            child = p.left if d <= 0 else p.right
            if child is None:
                xpn = p.next
                x.next, x.prev, x.parent = xpn, p, p
                if d <= 0:
                    p.left = x
                else:
                    p.right = x
                p.next = x
                if xpn is not None:
                    xpn.prev = x
                self._move_root_to_front(index, _balance_insertion(root, x))
                return
            p = child

    def resize(self) -> None:
        """Double the bins, splitting each list in order; a split tree stays a tree only if
        more than 6 keys remain, retreeified when the other half is not empty."""
        old, old_trees = self.bins, self.trees
        self.capacity *= 2
        self.bins = [None] * self.capacity
        self.trees = set()
        half = self.capacity // 2
        for j, first in enumerate(old):
            nodes = self._chain(first)
            lo = [n for n in nodes if not (n.hash & half)]
            hi = [n for n in nodes if n.hash & half]
            for index, part, other in ((j, lo, hi), (j + half, hi, lo)):
                self.bins[index] = self._link(part)
                if j in old_trees and len(part) > UNTREEIFY_THRESHOLD:
                    if other:
                        self._treeify(index)
                    else:
                        self.trees.add(index)

    def _treeify_bin(self, index: int) -> None:
        if self.capacity < MIN_TREEIFY_CAPACITY:
            self.resize()
        else:
            self._treeify(index)

    def insert(self, node: _Node, *, head: bool) -> None:
        """computeIfAbsent (head=True, resize checked first) or put of a new key."""
        if head and self.size > self.capacity * 3 // 4:
            self.resize()
        index = node.hash & (self.capacity - 1)
        if index in self.trees:
            self._put_tree(index, node)
        else:
            nodes = self._chain(self.bins[index])
            count = len(nodes)
            self.bins[index] = self._link([node, *nodes] if head else [*nodes, node])
            if count >= TREEIFY_THRESHOLD - (1 if head else 0):
                self._treeify_bin(index)
        self.size += 1
        if not head and self.size > self.capacity * 3 // 4:
            self.resize()

    def order(self) -> list[int]:
        return [n.key for first in self.bins for n in self._chain(first)]


def _simulate(
    spread: np.ndarray, ranks: np.ndarray | None, *, head_insert: bool, calls_after_last: bool
) -> Order:
    """Insertion by insertion, for maps where some bin reaches the treeify threshold; exact
    when the keys' compareTo order (`ranks`) is known."""
    table = _Map()
    signed = spread.astype(np.uint32).view(np.int32)
    for key in range(len(spread)):
        rank = int(ranks[key]) if ranks is not None else 0
        table.insert(_Node(key, int(signed[key]), rank), head=head_insert)
    if head_insert and calls_after_last and table.size > table.capacity * 3 // 4:
        table.resize()
    exact = ranks is not None or not table.trees
    if not exact:
        log.debug("a HashMap bin turned into a tree of keys of unknown order")
    return Order(np.asarray(table.order(), dtype=np.int64), exact)


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
