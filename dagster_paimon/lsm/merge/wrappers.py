"""Java's merge-function wrappers for lookup tables and changelog producers, slice by slice.

Each wrapper takes a slice holding every record of its keys (with _LEVEL) and returns the
records to write at the output level, in key order; the changelog it produces goes to a sink.

- LookupMerge: LookupMergeFunction + LookupChangelogMergeFunctionWrapper. A key merges its
  level-0 records with its lowest record above level 0, or, without one, with the newest row
  found in the levels above the output (whose position a deletion vector then marks).
- FirstRowMerge: FirstRowMergeFunctionWrapper. A key already above the output is dropped.
- FullChangelogMerge: FullChangelogMergeFunctionWrapper. The changelog of a full compaction
  against the previous top level.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dagster_paimon.format.schema import TableSchema
from dagster_paimon.io.index import BucketVectors
from dagster_paimon.io.kv import (
    DELETE,
    INSERT,
    LEVEL,
    POSITION,
    UPDATE_AFTER,
    UPDATE_BEFORE,
    VALUE_KIND,
    kv_schema,
)
from dagster_paimon.lsm.merge.key_groups import is_add
from dagster_paimon.lsm.merge.kway import MergeEngine, key_starts, merge_order, merge_slice
from dagster_paimon.lsm.merge.lookup import FILE, KEY_ID, LevelLookup
from dagster_paimon.lsm.model.options import CompactionOptions

ChangelogSink = Callable[[pa.Table], None]

_RANK = "_RANK"
_NO_LEVEL = np.iinfo(np.int32).max


@dataclass(frozen=True)
class _Grouped:
    """A slice in merge order with each record's key id and level."""

    table: pa.Table
    starts: np.ndarray
    key_id: np.ndarray
    levels: np.ndarray

    @property
    def num_keys(self) -> int:
        """Distinct keys in the slice."""
        return len(self.starts)

    def any_per_key(self, mask: np.ndarray) -> np.ndarray:
        """Per key, whether `mask` holds for any of its records."""
        return np.maximum.reduceat(mask, self.starts).astype(bool)

    def probe(self, key_ids: np.ndarray, keys: Sequence[str]) -> pa.Table:
        """Key columns and key id of some keys, ascending."""
        return self.table.take(pa.array(self.starts[key_ids])).select([*keys, KEY_ID])


def _grouped(piece: pa.Table, engine: MergeEngine, keys: Sequence[str]) -> _Grouped:
    """Sort a slice into merge order and number its keys."""
    table = piece.combine_chunks()
    table = table.take(pa.array(merge_order(table, engine, keys)))
    starts = key_starts(table, keys, np.arange(table.num_rows))
    key_id = np.repeat(np.arange(len(starts)), np.diff(np.append(starts, table.num_rows)))
    table = table.append_column(KEY_ID, pa.array(key_id, pa.int64()))
    return _Grouped(table, starts, key_id, np.asarray(table.column(LEVEL)))


def _lowest_high_level(grouped: _Grouped) -> np.ndarray:
    """Per key, the lowest level above 0 among its records, or 0 if it has none."""
    high = np.where(grouped.levels > 0, grouped.levels, _NO_LEVEL)
    lowest = np.minimum.reduceat(high, grouped.starts)
    return np.where(lowest == _NO_LEVEL, 0, lowest)


def _lookup_merged(grouped: _Grouped, lowest: np.ndarray) -> np.ndarray:
    """Records LookupMergeFunction merges: level 0 and each key's lowest record above it
    (`lowest`, per key, from _lowest_high_level)."""
    return (grouped.levels <= 0) | (grouped.levels == lowest[grouped.key_id])


def _by_key(table: pa.Table, num_keys: int) -> np.ndarray:
    """Row of `table` per key id (-1 where the key has none)."""
    index = np.full(num_keys, -1, dtype=np.int64)
    index[np.asarray(table.column(KEY_ID))] = np.arange(table.num_rows)
    return index


def _adds(table: pa.Table, index: np.ndarray) -> np.ndarray:
    """Per key, whether its row in `table` exists and adds a record."""
    kinds = np.asarray(table.column(VALUE_KIND))
    present = index >= 0
    out = np.zeros(len(index), dtype=bool)
    out[present] = is_add(kinds[index[present]])
    return out


def _equal_values(a: pa.Table, b: pa.Table, names: Sequence[str]) -> np.ndarray:
    """Row-wise equality of some columns of two aligned tables (Java's RecordEqualiser)."""
    equal = np.ones(a.num_rows, dtype=bool)
    for name in names:
        left, right = a.column(name).combine_chunks(), b.column(name).combine_chunks()
        try:
            same = pc.fill_null(pc.equal(left, right), False)
            both_null = pc.and_(left.is_null(), right.is_null())
            equal &= np.asarray(pc.or_(same, both_null))
        except pa.ArrowNotImplementedError:
            # Nested types have no vectorized equality in Arrow; compare their Python values.
            equal &= np.array(
                [x == y for x, y in zip(left.to_pylist(), right.to_pylist(), strict=True)],
                dtype=bool,
            )
    return equal


def _with_kind(table: pa.Table, kind: int, rank: int) -> pa.Table:
    """Rows re-labelled with a row kind, and a rank ordering -U before +U within a key."""
    index = table.schema.get_field_index(VALUE_KIND)
    kinds = pa.array(np.full(table.num_rows, kind, np.int8), table.schema.field(index).type)
    table = table.set_column(index, table.schema.field(index), kinds)
    return table.append_column(_RANK, pa.array(np.full(table.num_rows, rank, np.int8)))


@dataclass(frozen=True)
class ChangelogRule:
    """How the changelog compares a key's before and after (row-deduplicate and its fields)."""

    kv_names: tuple[str, ...]
    compared: tuple[str, ...] | None

    @classmethod
    def for_table(cls, schema: TableSchema) -> ChangelogRule:
        """The table's rule: its file layout, and the values row-deduplicate compares."""
        options = CompactionOptions.from_table_options(schema.options)
        ignored = set(options.row_deduplicate_ignore_fields)
        compared = tuple(f.name for f in schema.fields if f.name not in ignored)
        return cls(tuple(kv_schema(schema).names), compared if options.row_deduplicate else None)

    def changes(
        self,
        before: pa.Table,
        after: pa.Table,
        selected: np.ndarray,
    ) -> pa.Table | None:
        """+I, -D or -U/+U per selected key, from its before and after rows (by key id)."""
        num_keys = len(selected)
        b_index, a_index = _by_key(before, num_keys), _by_key(after, num_keys)
        b_add, a_add = _adds(before, b_index), _adds(after, a_index)
        insert = selected & ~b_add & a_add
        delete = selected & b_add & ~a_add
        update = selected & b_add & a_add
        if self.compared is not None and update.any():
            keys = np.flatnonzero(update)
            same = _equal_values(
                before.take(pa.array(b_index[keys])),
                after.take(pa.array(a_index[keys])),
                self.compared,
            )
            update[keys[same]] = False
        pieces = [
            _with_kind(after.take(pa.array(a_index[insert])), INSERT, 1),
            _with_kind(before.take(pa.array(b_index[delete])), DELETE, 0),
            _with_kind(before.take(pa.array(b_index[update])), UPDATE_BEFORE, 0),
            _with_kind(after.take(pa.array(a_index[update])), UPDATE_AFTER, 1),
        ]
        pieces = [p.select([*self.kv_names, KEY_ID, _RANK]) for p in pieces if p.num_rows]
        if not pieces:
            return None
        changes = pa.concat_tables(pieces).sort_by([(KEY_ID, "ascending"), (_RANK, "ascending")])
        return changes.select(list(self.kv_names))


def _written(result: pa.Table, kv_names: Sequence[str], drop_delete: bool) -> pa.Table:
    """The merged records to write: in the file layout, retractions dropped if asked."""
    if drop_delete and result.num_rows:
        adds = is_add(np.asarray(result.column(VALUE_KIND)))
        if not adds.all():
            result = result.filter(pa.array(adds))
    return result.select(list(kv_names))


class LookupMerge:
    """Lookup tables' merge: level 0 plus the newest record above it, looked up if not given.

    Without `lookup` this is the plain LookupMergeFunction of compactions that involve no
    level 0. With `vectors`, every row found above the output is marked deleted.
    """

    def __init__(
        self,
        engine: MergeEngine,
        keys: Sequence[str],
        rule: ChangelogRule,
        *,
        drop_delete: bool,
        lookup: LevelLookup | None = None,
        vectors: BucketVectors | None = None,
        changelog: ChangelogSink | None = None,
    ):
        self.engine = engine
        self.keys = list(keys)
        self.rule = rule
        self.drop_delete = drop_delete
        self.lookup = lookup
        self.vectors = vectors
        self.changelog = changelog

    def _mark_deleted(self, found: pa.Table) -> None:
        """Record the found rows' positions in their files' deletion vectors."""
        assert self.vectors is not None
        files = found.column(FILE)
        for name in pc.unique(files).to_pylist():
            rows = found.filter(pc.equal(files, name))
            self.vectors.delete(name, np.asarray(rows.column(POSITION)))

    def __call__(self, piece: pa.Table) -> pa.Table:
        """Merge one slice; changelog to the sink; the records to write."""
        grouped = _grouped(piece, self.engine, self.keys)
        lowest = _lowest_high_level(grouped)
        keep = _lookup_merged(grouped, lowest)
        table = grouped.table if keep.all() else grouped.table.filter(pa.array(keep))
        before = grouped.table.filter(pa.array(keep & (grouped.levels > 0)))
        missing = np.flatnonzero(lowest == 0)
        if self.lookup is not None and len(missing):
            found = self.lookup.find(grouped.probe(missing, self.keys))
            if found is not None:
                if self.vectors is not None:
                    self._mark_deleted(found)
                if self.lookup.with_values:
                    records = found.select(table.column_names)
                    table = pa.concat_tables([table, records])
                    before = pa.concat_tables([before, records])
        # the wrapper (lookups) calls the merge function even on a lone record: an
        # aggregation's lone -D becomes +I of its retracted values, as in Java
        result = merge_slice(
            table, self.engine, self.keys, drop_delete=False, merge_singles=self.lookup is not None
        )
        if self.changelog is not None:
            with_level0 = grouped.any_per_key(grouped.levels <= 0)
            changes = self.rule.changes(before, result, with_level0)
            if changes is not None:
                self.changelog(changes)
        return _written(result, self.rule.kv_names, self.drop_delete)


class FirstRowMerge:
    """First-row lookup tables: the oldest record wins and a key already above is dropped."""

    def __init__(
        self,
        engine: MergeEngine,
        keys: Sequence[str],
        kv_names: Sequence[str],
        *,
        drop_delete: bool,
        lookup: LevelLookup,
        changelog: ChangelogSink | None = None,
    ):
        self.engine = engine
        self.keys = list(keys)
        self.kv_names = list(kv_names)
        self.drop_delete = drop_delete
        self.lookup = lookup
        self.changelog = changelog

    def __call__(self, piece: pa.Table) -> pa.Table:
        """Merge one slice; new keys go to the changelog as they are written."""
        grouped = _grouped(piece, self.engine, self.keys)
        kinds = np.asarray(grouped.table.column(VALUE_KIND))
        # An ignored retraction never counts (FirstRowMergeFunction.add returns before).
        has_high = grouped.any_per_key((grouped.levels > 0) & is_add(kinds))
        result = merge_slice(grouped.table, self.engine, self.keys, drop_delete=False)
        result_keys = np.asarray(result.column(KEY_ID))
        new = ~has_high[result_keys]
        if new.any():
            found = self.lookup.find(grouped.probe(result_keys[new], self.keys))
            if found is not None:
                exists = np.zeros(grouped.num_keys, dtype=bool)
                exists[np.asarray(found.column(KEY_ID))] = True
                result = result.filter(pa.array(~exists[result_keys]))
                result_keys = np.asarray(result.column(KEY_ID))
                new = ~has_high[result_keys]
            if self.changelog is not None and new.any():
                self.changelog(result.filter(pa.array(new)).select(self.kv_names))
        return _written(result, self.kv_names, self.drop_delete)


class FullChangelogMerge:
    """A full compaction's merge, with the changelog against the previous top level.

    `lookup_merge` applies LookupMergeFunction's choice of records (tables that need lookup).
    """

    def __init__(
        self,
        engine: MergeEngine,
        keys: Sequence[str],
        rule: ChangelogRule,
        *,
        max_level: int,
        lookup_merge: bool,
        changelog: ChangelogSink,
    ):
        self.engine = engine
        self.keys = list(keys)
        self.rule = rule
        self.max_level = max_level
        self.lookup_merge = lookup_merge
        self.changelog = changelog

    def __call__(self, piece: pa.Table) -> pa.Table:
        """Merge one slice; the changelog of every key to the sink; the adds to write."""
        grouped = _grouped(piece, self.engine, self.keys)
        table = grouped.table
        if self.lookup_merge:
            keep = _lookup_merged(grouped, _lowest_high_level(grouped))
            table = table.filter(pa.array(keep))
        top = grouped.table.filter(pa.array(grouped.levels == self.max_level))
        result = merge_slice(table, self.engine, self.keys, drop_delete=False)
        sizes = np.diff(np.append(grouped.starts, len(grouped.key_id)))
        has_top = np.zeros(grouped.num_keys, dtype=bool)
        has_top[np.asarray(top.column(KEY_ID))] = True
        # A lone record that is the top itself is no change; every other key is compared.
        selected = ~((sizes == 1) & has_top)
        changes = self.rule.changes(top, result, selected)
        if changes is not None:
            self.changelog(changes)
        return _written(result, self.rule.kv_names, drop_delete=True)
