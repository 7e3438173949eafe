"""Where keys live in the levels above a compaction's output (Java's LookupLevels), vectorized.

A compaction merges in key order, so lookups arrive as ascending slices of keys. Each level is
a sorted run: only the files overlapping a slice's key range are loaded, as their key columns
and row positions (rows a deletion vector marks are gone), and a file is dropped once the
slices have passed its last key. Values are read only for the rows found, row group by row
group. Memory is therefore bounded by about one file's keys per level, never by the bucket.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dagster_paimon.format.manifest import DataFileMeta
from dagster_paimon.io.kv import LEVEL, POSITION

FILE = "_FILE"
KEY_ID = "_KEY_ID"

Key = tuple[Any, ...]


class LookupFile(Protocol):
    """One data file opened for lookups."""

    def keys(self) -> pa.Table:
        """Key columns and _POSITION of every live row, in key order."""
        ...

    def rows(self, positions: np.ndarray) -> pa.Table:
        """The full KV records at the given positions, in that order."""
        ...


FileOpener = Callable[[DataFileMeta], LookupFile]


def _row_key(table: pa.Table, names: Sequence[str], row: int) -> Key:
    """One row's key as comparable Python values."""
    return tuple(table.column(n)[row].as_py() for n in names)


def _bisect(table: pa.Table, names: Sequence[str], key: Key, *, right: bool) -> int:
    """First row whose key is >= key (> key when `right`), by binary search."""
    low, high = 0, table.num_rows
    while low < high:
        middle = (low + high) // 2
        probe = _row_key(table, names, middle)
        if probe < key or (right and probe == key):
            low = middle + 1
        else:
            high = middle
    return low


def _file_key(row: Any) -> Key | None:
    """A file's min or max key from its metadata, or None when unknown."""
    return None if row is None else tuple(row.values)


def _overlaps(file: DataFileMeta, low: Key, high: Key) -> bool:
    """Whether a file's key range meets [low, high]; unknown or incomparable ranges do."""
    first, last = _file_key(file.min_key), _file_key(file.max_key)
    try:
        return not ((last is not None and last < low) or (first is not None and first > high))
    except TypeError:
        return True


def _before(file: DataFileMeta, key: Key) -> bool:
    """Whether every key of the file sorts before `key` (so no later slice can need it)."""
    last = _file_key(file.max_key)
    try:
        return last is not None and last < key
    except TypeError:
        return False


def _int64(column: pa.ChunkedArray | pa.Array) -> np.ndarray | None:
    """An integer-like key column as int64 in the same order, or None for other types."""
    array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    kind = array.type
    if pa.types.is_integer(kind) and kind != pa.uint64():
        return np.asarray(array.cast(pa.int64()))
    if pa.types.is_date32(kind) or pa.types.is_time32(kind):
        return np.asarray(array.view(pa.int32())).astype(np.int64)
    if (
        pa.types.is_date64(kind)
        or pa.types.is_timestamp(kind)
        or pa.types.is_time64(kind)
        or pa.types.is_duration(kind)
    ):
        return np.asarray(array.view(pa.int64()))
    return None


@dataclass(frozen=True)
class _Codec:
    """Integer keys packed into one int64 in key order, over one file's value ranges.

    Each column is clipped to one below its lowest and one above its highest value in the file
    (a clipped key can never match), shifted into its own bits; keys then compare as numbers.
    """

    lows: tuple[int, ...]
    highs: tuple[int, ...]
    shifts: tuple[int, ...]

    @classmethod
    def of(cls, rows: pa.Table, names: Sequence[str]) -> _Codec | None:
        """A codec for a file's keys, or None when they are not integers or need > 62 bits."""
        if rows.num_rows == 0:
            return None
        converted = [_int64(rows.column(n)) for n in names]
        columns = [c for c in converted if c is not None]
        if len(columns) != len(converted):
            return None
        lows = tuple(int(c.min()) - 1 for c in columns)
        highs = tuple(int(c.max()) + 1 for c in columns)
        bits = [(high - low).bit_length() for low, high in zip(lows, highs, strict=True)]
        if sum(bits) > 62:
            return None
        shifts = tuple(sum(bits[i + 1 :]) for i in range(len(bits)))
        return cls(lows, highs, shifts)

    def encode(self, table: pa.Table, names: Sequence[str]) -> np.ndarray:
        """Each row's key as one int64."""
        code = np.zeros(table.num_rows, dtype=np.int64)
        for name, low, high, shift in zip(names, self.lows, self.highs, self.shifts, strict=True):
            values = _int64(table.column(name))
            assert values is not None
            code |= (np.clip(values, low, high) - low) << shift
        return code


class _Opened:
    """A file open for lookups: its keys, and their packed codes when the keys allow it."""

    def __init__(self, file: LookupFile, names: Sequence[str]):
        self.file = file
        self.rows = file.keys()
        self.codec = _Codec.of(self.rows, names)
        self.codes = self.codec.encode(self.rows, names) if self.codec else None


@dataclass
class _Level:
    """One level's sorted files and those currently open."""

    level: int
    files: tuple[DataFileMeta, ...]
    open: dict[str, _Opened]


class LevelLookup:
    """Finds, level by level from the lowest, the newest live row of each key (LookupUtils).

    `find` takes ascending, distinct keys (key columns and a _KEY_ID to carry) and returns one
    row per key found: the _KEY_ID, _LEVEL, _FILE and _POSITION, and with `with_values` the
    record itself (key, sequence number, kind and values).
    """

    def __init__(
        self,
        levels: Sequence[tuple[int, Sequence[DataFileMeta]]],
        key_columns: Sequence[str],
        opener: FileOpener,
        *,
        with_values: bool,
    ):
        self.key_columns = list(key_columns)
        self.opener = opener
        self.with_values = with_values
        self.levels = [_Level(level, tuple(files), {}) for level, files in levels if files]
        self.files_opened = 0

    def _open(self, level: _Level, file: DataFileMeta) -> _Opened:
        """A file of a level, opened once while slices still reach it."""
        opened = level.open.get(file.file_name)
        if opened is None:
            opened = level.open[file.file_name] = _Opened(self.opener(file), self.key_columns)
            self.files_opened += 1
        return opened

    def _hits(self, pending: pa.Table, opened: _Opened, low: Key, high: Key) -> pa.Table:
        """Pending keys the file holds, with their _POSITION: by packed codes when possible
        (both sides are sorted, so a binary search per key), else by a hash join."""
        rows = opened.rows
        if opened.codec is not None:
            assert opened.codes is not None
            codes = opened.codec.encode(pending, self.key_columns)
            index = np.searchsorted(opened.codes, codes)
            inside = index < len(opened.codes)
            found = np.zeros(len(codes), dtype=bool)
            found[inside] = opened.codes[index[inside]] == codes[inside]
            positions = rows.column(POSITION).take(pa.array(index[found]))
            return pending.filter(pa.array(found)).append_column(POSITION, positions)
        start = _bisect(rows, self.key_columns, low, right=False)
        end = _bisect(rows, self.key_columns, high, right=True)
        candidates = rows.slice(start, max(0, end - start))
        return pending.join(candidates, keys=self.key_columns, join_type="inner")

    def _evict(self, level: _Level, low: Key) -> None:
        """Close files whose keys all sort before the current slice."""
        for file in level.files:
            if file.file_name in level.open and _before(file, low):
                del level.open[file.file_name]

    def find(self, keys: pa.Table) -> pa.Table | None:
        """The newest live row of each key in the levels, or None if no key is found."""
        pending = keys
        found: list[pa.Table] = []
        for level in self.levels:
            if pending.num_rows == 0:
                break
            low = _row_key(pending, self.key_columns, 0)
            high = _row_key(pending, self.key_columns, pending.num_rows - 1)
            self._evict(level, low)
            for file in level.files:
                if pending.num_rows == 0:
                    break
                if not _overlaps(file, low, high):
                    continue
                opened = self._open(level, file)
                hits = self._hits(pending, opened, low, high)
                if hits.num_rows == 0:
                    continue
                pending = pending.filter(pc.invert(pc.is_in(pending[KEY_ID], hits[KEY_ID])))
                found.append(self._located(hits, opened, level.level, file.file_name))
        if not found:
            return None
        return pa.concat_tables(found, promote_options="default")

    def _located(self, hits: pa.Table, opened: _Opened, level: int, file_name: str) -> pa.Table:
        """Hits of one file with their level and file, and their records if values are wanted."""
        hits = hits.sort_by([(POSITION, "ascending")])
        if self.with_values:
            records = opened.file.rows(np.asarray(hits.column(POSITION)))
            carried = [n for n in hits.column_names if n not in records.column_names]
            for name in carried:
                records = records.append_column(name, hits.column(name))
            hits = records
        hits = hits.append_column(LEVEL, pa.array(np.full(hits.num_rows, level, np.int32)))
        return hits.append_column(FILE, pa.repeat(pa.scalar(file_name), hits.num_rows))
