"""Records grouped by key in merge order, and a walk that visits every key's i-th record at once.

Merge functions never loop over rows: they either pick one record per key with numpy reductions,
or fold Java's per-record `add` over all keys together, one record position at a time.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Generic, TypeAlias, TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dagster_paimon.io.kv import INSERT, SEQUENCE_NUMBER, UPDATE_AFTER, VALUE_KIND

Column: TypeAlias = pa.Array | np.ndarray
K = TypeVar("K", bound=Hashable)


def is_add(kinds: np.ndarray) -> np.ndarray:
    """+I and +U add a record; -U and -D retract one (Java's RowKind.isAdd)."""
    return (kinds == INSERT) | (kinds == UPDATE_AFTER)


def take(column: Column, indices: np.ndarray) -> Column:
    """Gather from an Arrow or numpy column alike."""
    if isinstance(column, np.ndarray):
        return column[indices]
    return column.take(pa.array(indices, type=pa.int64()))


def concat(columns: list[Column]) -> Column:
    """Concatenate Arrow or numpy pieces of one column."""
    if isinstance(columns[0], np.ndarray):
        return np.concatenate(columns)
    return pa.concat_arrays(columns)


def arrow_column(column: Column) -> pa.Array:
    """A column that is Arrow by construction (a value, never a numpy flag)."""
    if isinstance(column, np.ndarray):
        raise TypeError("expected an Arrow column, got a numpy array")
    return column


def scatter(base: Column, mask: np.ndarray, values: Column) -> Column:
    """`base` with the positions under `mask` replaced, in order, by `values` (any Arrow type)."""
    if isinstance(base, np.ndarray):
        out = base.copy()
        out[mask] = values
        return out
    count = int(np.count_nonzero(mask))
    if count == 0:
        return base
    values = arrow_column(values)
    if count == len(base):
        return values.cast(base.type)
    indices = np.arange(len(base), dtype=np.int64)
    indices[mask] = len(base) + np.arange(count, dtype=np.int64)
    return pa.concat_arrays([base, values.cast(base.type)]).take(pa.array(indices))


def valid_mask(column: pa.Array) -> np.ndarray:
    """Non-null positions as a numpy mask."""
    if column.null_count == 0:
        return np.ones(len(column), dtype=bool)
    return np.asarray(column.is_valid())


@dataclass(frozen=True, eq=False)
class KeyGroups:
    """The records of every key that has more than one, in merge order, key after key.

    `rows` indexes `source` (the unsorted slice being merged); positions used everywhere else
    index `rows`, so `table` (the records in merge order) is only materialized when needed.
    """

    source: pa.Table
    rows: np.ndarray
    starts: np.ndarray
    sizes: np.ndarray

    @property
    def num_groups(self) -> int:
        """Number of keys."""
        return len(self.starts)

    @cached_property
    def ends(self) -> np.ndarray:
        """Position one past each key's last record."""
        return self.starts + self.sizes

    @cached_property
    def table(self) -> pa.Table:
        """The records in merge order."""
        return self.source.take(pa.array(self.rows)).combine_chunks()

    @cached_property
    def kinds(self) -> np.ndarray:
        """Row kind per position."""
        return np.asarray(self.source.column(VALUE_KIND).take(pa.array(self.rows)))

    @cached_property
    def sequence_numbers(self) -> np.ndarray:
        """_SEQUENCE_NUMBER per position."""
        return np.asarray(self.source.column(SEQUENCE_NUMBER).take(pa.array(self.rows)))

    @cached_property
    def retract(self) -> np.ndarray:
        """Whether each position is a retraction (-U or -D)."""
        return ~is_add(self.kinds)

    def column(self, name: str) -> pa.Array:
        """One column in merge order, as a single chunk."""
        return self.table.column(name).combine_chunks()

    def last_where(self, mask: np.ndarray) -> np.ndarray:
        """Per key, the last position where `mask` holds, or -1."""
        positions = np.where(mask, np.arange(len(mask)), -1)
        found = np.maximum.reduceat(positions, self.starts)
        return np.where(found >= self.starts, found, -1)

    def first_where(self, mask: np.ndarray) -> np.ndarray:
        """Per key, the first position where `mask` holds, or -1."""
        positions = np.where(mask, np.arange(len(mask)), len(mask))
        found = np.minimum.reduceat(positions, self.starts)
        return np.where(found < self.ends, found, -1)

    def records(
        self, values: Mapping[str, pa.Array], kinds: np.ndarray, sequence_numbers: np.ndarray
    ) -> pa.Table:
        """One computed KV record per key: its key columns, sequence number, kind and values."""
        last = self.table.take(pa.array(self.ends - 1))
        columns = []
        for field in self.source.schema:
            if field.name == SEQUENCE_NUMBER:
                columns.append(pa.array(sequence_numbers, type=field.type))
            elif field.name == VALUE_KIND:
                columns.append(pa.array(kinds, type=field.type))
            elif field.name in values:
                columns.append(values[field.name].cast(field.type))
            else:
                columns.append(last.column(field.name).combine_chunks())
        return pa.Table.from_arrays(columns, schema=self.source.schema)


class GroupWalk(Generic[K]):
    """Visits the i-th record of every key at once, i = 0, 1, ...; keys leave as they run out.

    `state` holds one entry per key still walking (Arrow or numpy); a merge function replaces its
    entries at each step. Keys are walked longest first, so the keys still walking are always a
    prefix and finished keys are set aside without copying. Cost: O(records) element work plus
    O(longest key) vectorized steps.
    """

    def __init__(self, groups: KeyGroups, state: Mapping[K, Column]) -> None:
        self._order = np.argsort(-groups.sizes, kind="stable")
        self._descending_sizes = groups.sizes[self._order]
        self._starts = groups.starts[self._order]
        self.state: dict[K, Column] = {k: take(v, self._order) for k, v in state.items()}
        self._finished: list[dict[K, Column]] = []

    def __iter__(self) -> Iterator[np.ndarray]:
        """Yield, per step, the positions of the current record of every key still walking."""
        longest = int(self._descending_sizes[0]) if len(self._descending_sizes) else 0
        negated = -self._descending_sizes
        for depth in range(longest):
            walking = int(np.searchsorted(negated, -depth, side="left"))
            self._retire(walking)
            yield self._starts[:walking] + depth

    def _retire(self, walking: int) -> None:
        """Set aside the state of keys that have no record at this depth."""
        current = len(next(iter(self.state.values()))) if self.state else walking
        if walking < current:
            self._finished.append({k: v[walking:] for k, v in self.state.items()})
            self.state = {k: v[:walking] for k, v in self.state.items()}

    def result(self) -> dict[K, Column]:
        """Final state of every key, in the original key order."""
        pieces = [self.state, *reversed(self._finished)]
        inverse = np.empty_like(self._order)
        inverse[self._order] = np.arange(len(self._order))
        return {k: take(concat([p[k] for p in pieces]), inverse) for k in self.state}


def replace_where(column: pa.Array, mask: np.ndarray, replacement: pa.Array) -> pa.Array:
    """Elementwise `replacement if mask else column`, for any Arrow type."""
    if not mask.any():
        return column
    if mask.all():
        return replacement.cast(column.type)
    return scatter(column, mask, replacement.filter(pa.array(mask)))


def nulls_like(column: pa.Array, mask: np.ndarray) -> pa.Array:
    """`column` with the positions under `mask` set to null."""
    if not mask.any():
        return column
    return pc.if_else(pa.array(mask), pa.nulls(len(column), column.type), column)
