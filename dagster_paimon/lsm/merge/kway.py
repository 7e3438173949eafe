"""Vectorized, memory-bounded k-way merge of sorted runs of KV records (MergeTreeCompactRewriter).

Each run keeps one batch buffered (plus the records of a key that straddles its batches). The
frontier is the smallest last key among runs that may still produce rows: every buffered record
with a smaller key is complete, so that slice is sorted into merge order (key, sequence.field,
_SEQUENCE_NUMBER, retract before add), merged per key by the merge function (vectorized across
keys), and emitted; runs whose buffer reached the frontier pull their next batch. Memory is
bounded by batch size x number of runs, never by run length.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dagster_paimon.errors import InternalError
from dagster_paimon.format.schema import TableSchema
from dagster_paimon.io.kv import (
    INSERT,
    KEY_PREFIX,
    SEQUENCE_NUMBER,
    UPDATE_AFTER,
    VALUE_KIND,
    value_schema,
)
from dagster_paimon.lsm.merge.factory import merge_function_from_options, sequence_order
from dagster_paimon.lsm.merge.functions import MergeFunction
from dagster_paimon.lsm.merge.key_groups import KeyGroups, is_add

__all__ = [
    "DEFAULT_MAX_BATCH_ROWS",
    "MergeEngine",
    "MergeStats",
    "SliceMerge",
    "key_starts",
    "merge_order",
    "merge_slice",
    "merge_sorted_runs",
]

DEFAULT_MAX_BATCH_ROWS = 64 * 1024

SliceMerge = Callable[[pa.Table], pa.Table]


@dataclass(frozen=True)
class MergeEngine:
    """A table's merge engine: its merge function and how one key's records are ordered."""

    function: MergeFunction
    key_columns: tuple[str, ...]
    sequence_fields: tuple[str, ...] = ()
    sequence_ascending: bool = True

    @classmethod
    def from_options(
        cls,
        values: pa.Schema,
        primary_keys: Sequence[str],
        partition_keys: Sequence[str],
        options: Mapping[str, str],
    ) -> MergeEngine:
        """Build from the table columns (with nullability), keys and table options."""
        function = merge_function_from_options(values, primary_keys, partition_keys, options)
        fields, ascending = sequence_order(options, values)
        keys = tuple(KEY_PREFIX + k for k in primary_keys if k not in partition_keys)
        return cls(function, keys, fields, ascending)

    @classmethod
    def for_table(cls, schema: TableSchema) -> MergeEngine:
        """Build from a pypaimon table schema."""
        return cls.from_options(
            value_schema(schema), schema.primary_keys, schema.partition_keys, schema.options
        )


@dataclass
class MergeStats:
    """Counters of one merge: rows in and out, and the most rows its run buffers held at once."""

    rows_read: int = 0
    rows_written: int = 0
    peak_buffered_rows: int = 0


class _Run:
    """One input run: its batch iterator and the rows pulled but not merged yet."""

    def __init__(self, batches: Iterable[pa.RecordBatch], keys: Sequence[str]) -> None:
        self._batches = iter(batches)
        self._keys = list(keys)
        self.buffer: pa.Table | None = None
        self.exhausted = False

    @property
    def buffered(self) -> int:
        """Rows held."""
        return 0 if self.buffer is None else self.buffer.num_rows

    def pull(self, schema: pa.Schema | None) -> pa.Schema | None:
        """Append the next non-empty batch (cast to `schema`), or mark the run exhausted."""
        for batch in self._batches:
            if batch.num_rows == 0:
                continue
            if schema is not None and not batch.schema.equals(schema):
                batch = batch.cast(schema)
            table = pa.Table.from_batches([batch])
            self.buffer = table if self.buffer is None else pa.concat_tables([self.buffer, table])
            return batch.schema
        self.exhausted = True
        return schema

    def key_at(self, row: int) -> tuple[Any, ...]:
        """The key of one buffered row, as comparable Python values."""
        assert self.buffer is not None
        return tuple(self.buffer.column(k)[row].as_py() for k in self._keys)

    def last_key(self) -> tuple[Any, ...]:
        """The key of the last buffered row."""
        return self.key_at(self.buffered - 1)

    def take_before(self, frontier: tuple[Any, ...] | None) -> pa.Table | None:
        """Remove and return the buffered rows whose key is below `frontier` (all if None)."""
        if self.buffer is None:
            return None
        low, high = 0, self.buffered
        if frontier is not None:
            while low < high:
                middle = (low + high) // 2
                if self.key_at(middle) < frontier:
                    low = middle + 1
                else:
                    high = middle
        else:
            low = high
        taken, rest = self.buffer.slice(0, low), self.buffer.slice(low)
        self.buffer = rest if rest.num_rows else None
        return taken if taken.num_rows else None


def merge_order(table: pa.Table, engine: MergeEngine, keys: Sequence[str]) -> np.ndarray:
    """Indices sorting the slice into merge order: key, sequence.field (nulls first in either
    direction), sequence number, retract before add (SortMergeReaderWithMinHeap's comparator).
    The sort is stable, so full ties keep run order."""
    kinds = table.column(VALUE_KIND)
    direction = "ascending" if engine.sequence_ascending else "descending"
    columns = [
        *(table.column(k) for k in keys),
        *(table.column(f) for f in engine.sequence_fields),
        table.column(SEQUENCE_NUMBER),
        pc.is_in(kinds, pa.array([INSERT, UPDATE_AFTER], kinds.type)),
    ]
    directions = ["ascending"] * len(keys) + [direction] * len(engine.sequence_fields)
    directions += ["ascending", "ascending"]
    names = [str(i) for i in range(len(columns))]
    indices = pc.sort_indices(
        pa.Table.from_arrays(columns, names=names),
        sort_keys=list(zip(names, directions, strict=True)),
        null_placement="at_start",
    )
    return np.asarray(indices)


def key_starts(table: pa.Table, keys: Sequence[str], order: np.ndarray) -> np.ndarray:
    """Positions (in merge order) where a new key starts."""
    starts = np.zeros(len(order), dtype=bool)
    starts[0] = True
    for name in keys:
        column = table.column(name).take(pa.array(order))
        if len(order) > 1:
            starts[1:] |= np.asarray(pc.not_equal(column[1:], column[:-1]))
    return np.flatnonzero(starts)


def merge_slice(
    table: pa.Table,
    engine: MergeEngine,
    keys: Sequence[str],
    drop_delete: bool,
    *,
    merge_singles: bool = False,
) -> pa.Table:
    """Merge a slice holding every record of its keys: one output record per key, in key order.

    A key with one record passes through unchanged (ReducerMergeFunctionWrapper) unless
    `merge_singles`: Java's lookup wrapper runs the merge function on every key.
    """
    table = table.combine_chunks()
    order = merge_order(table, engine, keys)
    starts = key_starts(table, keys, order)
    sizes = np.diff(np.append(starts, len(order)))
    multi = sizes > (0 if merge_singles else 1)
    singles = order[starts[~multi]]
    if not multi.any():
        result = table.take(pa.array(singles))
    else:
        groups = KeyGroups(
            source=table,
            rows=order[np.repeat(multi, sizes)],
            starts=np.concatenate([[0], np.cumsum(sizes[multi])[:-1]]),
            sizes=sizes[multi],
        )
        output = engine.function.merge(groups)
        if output.records is None:
            assert output.picked is not None
            picked = np.full(len(starts), -1, dtype=np.int64)
            picked[~multi] = singles
            picked[multi] = np.where(output.picked >= 0, groups.rows[output.picked], -1)
            result = table.take(pa.array(picked[picked >= 0]))
        else:
            position = np.empty(len(starts), dtype=np.int64)
            position[~multi] = np.arange(len(singles))
            position[multi] = len(singles) + np.arange(groups.num_groups)
            combined = pa.concat_tables([table.take(pa.array(singles)), output.records])
            result = combined.combine_chunks().take(pa.array(position))
    if drop_delete:
        kinds = np.asarray(result.column(VALUE_KIND))
        if not is_add(kinds).all():
            result = result.filter(pa.array(is_add(kinds)))
    return result


class _Rebatcher:
    """Collects merged slices into output batches of at most `max_rows` rows."""

    def __init__(self, max_rows: int) -> None:
        self._max_rows = max_rows
        self._pending: list[pa.Table] = []
        self._rows = 0

    def add(self, table: pa.Table) -> Iterator[pa.RecordBatch]:
        """Buffer a slice; yield full batches."""
        if table.num_rows:
            self._pending.append(table)
            self._rows += table.num_rows
        if self._rows >= self._max_rows:
            yield from self.flush(full_only=True)

    def flush(self, full_only: bool = False) -> Iterator[pa.RecordBatch]:
        """Yield buffered rows (only whole batches when `full_only`)."""
        if not self._pending:
            return
        combined = pa.concat_tables(self._pending).combine_chunks()
        batches = combined.to_batches(max_chunksize=self._max_rows)
        keep = batches[-1] if full_only and batches[-1].num_rows < self._max_rows else None
        self._pending = [pa.Table.from_batches([keep])] if keep is not None else []
        self._rows = keep.num_rows if keep is not None else 0
        yield from (b for b in batches if b is not keep)


def merge_sorted_runs(
    runs: Sequence[Iterable[pa.RecordBatch]],
    engine: MergeEngine,
    *,
    drop_delete: bool,
    key_columns: Sequence[str],
    max_batch_rows: int = DEFAULT_MAX_BATCH_ROWS,
    stats: MergeStats | None = None,
    slice_merge: SliceMerge | None = None,
) -> Iterator[pa.RecordBatch]:
    """Merge runs of KV batches (each sorted by key) into one stream, one record per key.

    A key with one record passes through unchanged; null merge results are skipped;
    `drop_delete` keeps only +I/+U records. Output batches hold at most `max_batch_rows` rows.
    `slice_merge` replaces the merge of each slice holding every record of its keys (Java's
    merge function wrappers: lookup, changelog); it applies `drop_delete` itself.
    """
    if max_batch_rows < 1:
        raise InternalError("max_batch_rows must be at least 1")
    stats = stats if stats is not None else MergeStats()
    cursors = [_Run(run, key_columns) for run in runs]
    to_pull = list(cursors)
    schema: pa.Schema | None = None
    output = _Rebatcher(max_batch_rows)
    while True:
        for cursor in to_pull:
            before = cursor.buffered
            schema = cursor.pull(schema)
            stats.rows_read += cursor.buffered - before
        stats.peak_buffered_rows = max(stats.peak_buffered_rows, sum(c.buffered for c in cursors))
        loaded = [c for c in cursors if c.buffered]
        if not loaded:
            break
        still_open = [c for c in loaded if not c.exhausted]
        frontier = min(c.last_key() for c in still_open) if still_open else None
        to_pull = [c for c in still_open if c.last_key() == frontier]
        pieces = [p for p in (c.take_before(frontier) for c in loaded) if p is not None]
        if not pieces:
            continue
        piece = pa.concat_tables(pieces)
        if slice_merge is None:
            merged = merge_slice(piece, engine, key_columns, drop_delete)
        else:
            merged = slice_merge(piece)
        stats.rows_written += merged.num_rows
        yield from output.add(merged)
    yield from output.flush()
