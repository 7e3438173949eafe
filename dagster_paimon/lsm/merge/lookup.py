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
from pypaimon.manifest.schema.data_file_meta import DataFileMeta

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


@dataclass
class _Level:
    """One level's sorted files and those currently open."""

    level: int
    files: tuple[DataFileMeta, ...]
    open: dict[str, LookupFile]


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

    def _open(self, level: _Level, file: DataFileMeta) -> LookupFile:
        """A file of a level, opened once while slices still reach it."""
        opened = level.open.get(file.file_name)
        if opened is None:
            opened = level.open[file.file_name] = self.opener(file)
            self.files_opened += 1
        return opened

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
                rows = opened.keys()
                start = _bisect(rows, self.key_columns, low, right=False)
                end = _bisect(rows, self.key_columns, high, right=True)
                if start >= end:
                    continue
                candidates = rows.slice(start, end - start)
                hits = pending.join(candidates, keys=self.key_columns, join_type="inner")
                if hits.num_rows == 0:
                    continue
                pending = pending.filter(pc.invert(pc.is_in(pending[KEY_ID], hits[KEY_ID])))
                found.append(self._located(hits, opened, level.level, file.file_name))
        if not found:
            return None
        return pa.concat_tables(found, promote_options="default")

    def _located(self, hits: pa.Table, opened: LookupFile, level: int, file_name: str) -> pa.Table:
        """Hits of one file with their level and file, and their records if values are wanted."""
        hits = hits.sort_by([(POSITION, "ascending")])
        if self.with_values:
            records = opened.rows(np.asarray(hits.column(POSITION)))
            carried = [n for n in hits.column_names if n not in records.column_names]
            for name in carried:
                records = records.append_column(name, hits.column(name))
            hits = records
        hits = hits.append_column(LEVEL, pa.array(np.full(hits.num_rows, level, np.int32)))
        return hits.append_column(FILE, pa.repeat(pa.scalar(file_name), hits.num_rows))
