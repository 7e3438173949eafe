"""listagg, collect and merge_map (Field{Listagg,Collect,MergeMap}Agg.java) for many keys.

Elements of all keys are gathered through numpy offsets and matched by integer codes, so no
Python loop touches an element. Where Java iterates a HashSet/HashMap (distinct collect,
merge_map) its order is unspecified; here it is first-insertion order.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from dagster_paimon.lsm.merge.aggregate.aggregators import AggState, FieldAggregator
from dagster_paimon.lsm.merge.key_groups import scatter, valid_mask

# Character.isWhitespace: ASCII controls 9-13 and 28-31, and Unicode space separators except the
# no-break ones (U+00A0, U+2007, U+202F); StringUtils.isBlank is "only such characters".
_JAVA_BLANK = (
    r"^[\t\n\x0B\f\r\x1C-\x1F \x{1680}\x{2000}-\x{2006}\x{2008}-\x{200A}"
    r"\x{2028}\x{2029}\x{205F}\x{3000}]*$"
)


def _blank(column: pa.Array) -> np.ndarray:
    """StringUtils.isBlank per element; null counts as blank."""
    return np.asarray(pc.fill_null(pc.match_substring_regex(column, _JAVA_BLANK), True))


def _elements(column: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """Per element of a list or map array: its row, and its index into the child array."""
    offsets = np.asarray(column.offsets)
    lengths = np.where(valid_mask(column), np.diff(offsets), 0)
    rows = np.repeat(np.arange(len(column)), lengths)
    first = np.concatenate([[0], np.cumsum(lengths)[:-1]]) if len(lengths) else lengths
    within = np.arange(len(rows)) - np.repeat(first, lengths)
    return rows, np.repeat(offsets[:-1], lengths) + within


def _child(column: pa.Array) -> pa.Array:
    """The child values of a list array, or the key/value entries of a map array."""
    if isinstance(column, pa.MapArray):
        return pa.StructArray.from_arrays([column.keys, column.items], ["key", "value"])
    return column.values


def _gather_elements(
    columns: list[pa.Array],
) -> tuple[np.ndarray, np.ndarray, pa.Array]:
    """Elements of several list arrays, row by row and, within a row, array by array.

    Returns each element's row, which array it came from, and the elements themselves.
    """
    rows, sources, values = [], [], []
    for source, column in enumerate(columns):
        row, index = _elements(column)
        rows.append(row)
        sources.append(np.full(len(row), source))
        values.append(_child(column).take(pa.array(index, type=pa.int64())))
    row = np.concatenate(rows)
    order = np.argsort(row, kind="stable")
    return row[order], np.concatenate(sources)[order], pa.concat_arrays(values).take(order)


def _codes(values: pa.Array) -> np.ndarray:
    """Equal elements (nested ones too; null equals null) get equal integer codes."""
    frame = pl.DataFrame({"v": pl.from_arrow(values)}).with_row_index("i")
    return frame.select(pl.col("i").min().over("v"))["i"].to_numpy().astype(np.int64)


def _row_keys(rows: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """One integer per (row, element code) pair."""
    return rows * (int(codes.max(initial=0)) + 1) + codes


def _first_occurrences(keys: np.ndarray) -> np.ndarray:
    """Mask of the first occurrence of every key value."""
    mask = np.zeros(len(keys), dtype=bool)
    mask[np.unique(keys, return_index=True)[1]] = True
    return mask


def _occurrence(keys: np.ndarray) -> np.ndarray:
    """How many earlier elements share each element's key (0 for the first occurrence)."""
    order = np.argsort(keys, kind="stable")
    ordered = keys[order]
    occurrence = np.empty(len(keys), dtype=np.int64)
    occurrence[order] = np.arange(len(keys)) - np.searchsorted(ordered, ordered, side="left")
    return occurrence


def _count_of(keys: np.ndarray, table: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Per key, its count in the sorted (table, counts) pairs, 0 if absent."""
    if len(table) == 0:
        return np.zeros(len(keys), dtype=np.int64)
    found = np.minimum(np.searchsorted(table, keys), len(table) - 1)
    return np.where(table[found] == keys, counts[found], 0)


def _build_lists(
    type_: pa.DataType, rows: np.ndarray, values: pa.Array, length: int, valid: np.ndarray
) -> pa.Array:
    """A list or map array of `length` rows from elements sorted by row."""
    counts = np.bincount(rows, minlength=length)
    offsets = np.concatenate([[0], np.cumsum(counts)])
    mask = pa.array(~valid, type=pa.bool_())
    if pa.types.is_map(type_):
        return pa.MapArray.from_arrays(
            pa.array(offsets, pa.int32()),
            values.field("key"),
            values.field("value"),
            type=type_,
            mask=mask,
        )
    if pa.types.is_large_list(type_):
        return pa.LargeListArray.from_arrays(
            pa.array(offsets, pa.int64()), values, type=type_, mask=mask
        )
    return pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), values, type=type_, mask=mask)


class ListAgg(FieldAggregator):
    """FieldListaggAgg: join non-blank strings with a delimiter, optionally skipping seen tokens."""

    name = "listagg"

    def __init__(self, field: pa.Field, delimiter: str, distinct: bool) -> None:
        super().__init__(field)
        self.delimiter = delimiter
        self.distinct = distinct

    def combine(self, acc: pa.Array, inp: pa.Array) -> pa.Array:
        """acc + delimiter + in; blank inputs keep acc, a blank acc takes the input."""
        inp_blank, acc_blank = _blank(inp), _blank(acc)
        both = ~inp_blank & ~acc_blank
        joined = pc.binary_join_element_wise(acc, inp, pa.scalar(self.delimiter, acc.type))
        if self.distinct and both.any():
            mask = pa.array(both)
            joined = scatter(
                joined, both, self._append_new_tokens(acc.filter(mask), inp.filter(mask))
            )
        result = pc.if_else(pa.array(acc_blank), inp, joined)
        return pc.if_else(pa.array(inp_blank), acc, result)

    def _append_new_tokens(self, acc: pa.Array, inp: pa.Array) -> pa.Array:
        """Append each non-blank token of in that acc (split by the delimiter) does not hold."""
        separator = self.delimiter or " "
        row, source, tokens = _gather_elements(
            [pc.split_pattern(acc, separator), pc.split_pattern(inp, separator)]
        )
        codes = np.asarray(pc.dictionary_encode(tokens).indices, dtype=np.int64)
        new = (source == 1) & _first_occurrences(_row_keys(row, codes)) & ~_blank(tokens)
        kept = tokens.filter(pa.array(new))
        lists = _build_lists(
            pa.list_(tokens.type), row[new], kept, len(acc), np.ones(len(acc), bool)
        )
        delimiter = pa.scalar(self.delimiter, acc.type)
        appended = pc.binary_join_element_wise(acc, pc.binary_join(lists, delimiter), delimiter)
        return pc.if_else(pa.array(np.bincount(row[new], minlength=len(acc)) > 0), appended, acc)


class Collect(FieldAggregator):
    """FieldCollectAgg: concatenated arrays; retract removes one match per retracted element."""

    name = "collect"

    def __init__(self, field: pa.Field, distinct: bool) -> None:
        super().__init__(field)
        self.distinct = distinct

    def combine(self, acc: pa.Array, inp: pa.Array) -> pa.Array:
        """acc's elements then in's; a null side contributes nothing."""
        valid = valid_mask(acc) | valid_mask(inp)
        row, _, values = _gather_elements([acc, inp])
        if self.distinct:
            first = _first_occurrences(_row_keys(row, _codes(values)))
            row, values = row[first], values.filter(pa.array(first))
        return _build_lists(acc.type, row, values, len(acc), valid)

    def agg_reversed(self, acc: pa.Array, inp: pa.Array, seen: np.ndarray) -> AggState:
        """Java overrides aggReversed to plain agg: the accumulator stays first."""
        return self.agg(acc, inp, seen)

    def retract(self, acc: pa.Array, inp: pa.Array) -> pa.Array:
        """acc without the earliest element matching each retracted element."""
        row, source, values = _gather_elements([acc, inp])
        keys = _row_keys(row, _codes(values))
        held = np.flatnonzero(source == 0)
        retracted, counts = np.unique(keys[source == 1], return_counts=True)
        budget = _count_of(keys[held], retracted, counts)
        keep = held[_occurrence(keys[held]) >= budget]
        return _build_lists(
            acc.type, row[keep], values.take(pa.array(keep, pa.int64())), len(acc), valid_mask(acc)
        )


class MergeMap(FieldAggregator):
    """FieldMergeMapAgg: later entries override earlier keys; retract removes keys."""

    name = "merge_map"

    def combine(self, acc: pa.Array, inp: pa.Array) -> pa.Array:
        """acc's entries overridden and extended by in's."""
        valid = valid_mask(acc) | valid_mask(inp)
        row, _, entries = _gather_elements([acc, inp])
        keys = _row_keys(row, _codes(entries.field("key")))
        _, first = np.unique(keys, return_index=True)
        last = len(keys) - 1 - np.unique(keys[::-1], return_index=True)[1]
        order = np.argsort(first)
        key_rows = first[order]
        merged = pa.StructArray.from_arrays(
            [
                entries.field("key").take(pa.array(key_rows, pa.int64())),
                entries.field("value").take(pa.array(last[order], pa.int64())),
            ],
            ["key", "value"],
        )
        return _build_lists(acc.type, row[key_rows], merged, len(acc), valid)

    def retract(self, acc: pa.Array, inp: pa.Array) -> pa.Array:
        """acc without the keys that in holds."""
        row, source, entries = _gather_elements([acc, inp])
        keys = _row_keys(row, _codes(entries.field("key")))
        held = np.flatnonzero(source == 0)
        keep = held[~np.isin(keys[held], keys[source == 1])]
        return _build_lists(
            acc.type, row[keep], entries.take(pa.array(keep, pa.int64())), len(acc), valid_mask(acc)
        )
