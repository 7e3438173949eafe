"""The merge-function wrappers against Java's LookupChangelogMergeFunctionWrapperTest,
LookupMergeFunctionTest and FullChangelogMergeFunctionWrapperTestBase, slice by slice."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest
from pyroaring import BitMap

from dagster_paimon.io.index import BucketVectors
from dagster_paimon.io.kv import LEVEL
from dagster_paimon.lsm.merge.kway import MergeEngine
from dagster_paimon.lsm.merge.lookup import LevelLookup
from dagster_paimon.lsm.merge.wrappers import (
    ChangelogRule,
    FirstRowMerge,
    FullChangelogMerge,
    LookupMerge,
)
from tests.lsm import merge_model as m
from tests.lsm.merge.test_lookup import KEYS, KV, VALUES, Opener, kv, lookup_of, meta

INS, UB, UA, DEL = 0, 1, 2, 3
SUM = {"merge-engine": "aggregation", "fields.v.aggregate-function": "sum"}

# A second table with two value columns, for ignored fields and partial updates.
VALUES_VW = pa.schema([*VALUES, pa.field("w", pa.int32())])
KV_VW = m.kv_schema_of(VALUES_VW, ["k"])

Row = tuple[Any, ...]
Levels = dict[int, dict[str, list[dict]]]


def at(level: int, key: int, seq: int, kind: int, v: int | None, **more: Any) -> dict:
    """A slice record: a KV record of `key` read from a file of `level`."""
    return {**kv(key, seq, v, kind), **more, LEVEL: level}


def piece(records: list[dict], kv_schema: pa.Schema = KV) -> pa.Table:
    """A slice table: the KV columns and _LEVEL."""
    schema = kv_schema.append(pa.field(LEVEL, pa.int32()))  # as read_run adds it
    return pa.Table.from_pylist(records, schema=schema)


def rows(table: pa.Table, kv_schema: pa.Schema = KV) -> list[Row]:
    """(key, sequence number, kind, values...) per record, checking the file layout."""
    assert table.schema.names == kv_schema.names
    out = []
    for r in table.to_pylist():
        assert r["k"] == r["_KEY_k"]
        values = [r[f.name] for f in kv_schema if f.name not in ("k", *KEYS, m.SEQ, m.KIND)]
        out.append((r["k"], r[m.SEQ], r[m.KIND], *values))
    return out


def engine(options: dict[str, str] | None = None, values: pa.Schema = VALUES) -> MergeEngine:
    """The merge engine of table (k, ...) keyed by k."""
    return MergeEngine.from_options(values, ["k"], [], options or {})


def rule(dedup: bool) -> ChangelogRule:
    """The changelog rule of table (k, v), comparing both columns when rows are deduplicated."""
    return ChangelogRule(tuple(KV.names), ("k", "v") if dedup else None)


class Sink:
    """Collects changelog tables."""

    def __init__(self, kv_schema: pa.Schema = KV) -> None:
        self.kv_schema = kv_schema
        self.tables: list[pa.Table] = []

    def __call__(self, table: pa.Table) -> None:
        self.tables.append(table)

    @property
    def rows(self) -> list[Row]:
        return [row for t in self.tables for row in rows(t, self.kv_schema)]


def lookup_merge(
    records: list[dict],
    high: Levels | None = None,
    *,
    options: dict[str, str] | None = None,
    dedup: bool = False,
    drop_delete: bool = False,
    vectors: BucketVectors | None = None,
    with_values: bool = True,
) -> tuple[list[Row], list[Row]]:
    """Run LookupMerge on one slice (looking keys up in `high` if given): written, changelog."""
    lookup = None if high is None else lookup_of(high, with_values=with_values)[0]
    sink = Sink()
    merge = LookupMerge(
        engine(options),
        KEYS,
        rule(dedup),
        drop_delete=drop_delete,
        lookup=lookup,
        vectors=vectors,
        changelog=sink,
    )
    return rows(merge(piece(records))), sink.rows


# LookupChangelogMergeFunctionWrapperTest.testDeduplicate, LookupMergeFunctionTest, and more:
# (slice, levels to look up in, written, changelog, changelog with row-deduplicate).
DEDUPLICATE_CASES = {
    "without level 0": (
        [at(2, 1, 1, INS, 1), at(1, 1, 2, INS, 2)],
        {},
        [(1, 2, INS, 2)],
        [],
        [],
    ),
    "level 0 and level x": (
        [at(1, 1, 1, INS, 1), at(0, 1, 2, INS, 2)],
        {},
        [(1, 2, INS, 2)],
        [(1, 1, UB, 1), (1, 2, UA, 2)],
        [(1, 1, UB, 1), (1, 2, UA, 2)],
    ),
    "level 0 only, lookup miss": (
        [at(0, 1, 1, UA, 2)],
        {2: {"h": [kv(0, 1, 0), kv(2, 1, 2)]}},
        [(1, 1, UA, 2)],
        [(1, 1, INS, 2)],
        [(1, 1, INS, 2)],
    ),
    "level 0 only, lookup hit": (
        [at(0, 1, 2, INS, 2)],
        {2: {"h": [kv(1, 1, 1)]}},
        [(1, 2, INS, 2)],
        [(1, 1, UB, 1), (1, 2, UA, 2)],
        [(1, 1, UB, 1), (1, 2, UA, 2)],
    ),
    "level 0 only, lookup hit is a delete": (
        [at(0, 1, 2, INS, 2)],
        {2: {"h": [kv(1, 1, 1, DEL)]}},
        [(1, 2, INS, 2)],
        [(1, 2, INS, 2)],
        [(1, 2, INS, 2)],
    ),
    "level 0 retract, lookup miss": (
        [at(0, 1, 1, UB, 2)],
        {},
        [(1, 1, UB, 2)],
        [],
        [],
    ),
    "level 0 delete, lookup hit is a delete": (
        [at(0, 1, 2, DEL, 2)],
        {2: {"h": [kv(1, 1, 1, DEL)]}},
        [(1, 2, DEL, 2)],
        [],
        [],
    ),
    "level 0 delete of a level x record": (
        [at(1, 1, 1, INS, 1), at(0, 1, 2, DEL, 1)],
        {},
        [(1, 2, DEL, 1)],
        [(1, 1, DEL, 1)],
        [(1, 1, DEL, 1)],
    ),
    "level 0 delete of a looked-up record": (
        [at(0, 1, 2, DEL, 1)],
        {3: {"h": [kv(1, 1, 1)]}},
        [(1, 2, DEL, 1)],
        [(1, 1, DEL, 1)],
        [(1, 1, DEL, 1)],
    ),
    "same record in level 0 and level x": (
        [at(0, 1, 2, INS, 2), at(2, 1, 2, INS, 2)],
        {},
        [(1, 2, INS, 2)],
        [(1, 2, UB, 2), (1, 2, UA, 2)],
        [],
    ),
    "same record in level 0 and looked up": (
        [at(0, 1, 2, INS, 2)],
        {2: {"h": [kv(1, 2, 2)]}},
        [(1, 2, INS, 2)],
        [(1, 2, UB, 2), (1, 2, UA, 2)],
        [],
    ),
    "only the lowest level x is the before": (
        [at(1, 1, 1, INS, 1), at(2, 1, 1, INS, 2), at(0, 1, 2, INS, 3)],
        {},
        [(1, 2, INS, 3)],
        [(1, 1, UB, 1), (1, 2, UA, 3)],
        [(1, 1, UB, 1), (1, 2, UA, 3)],
    ),
    "keep the lowest level x without level 0": (
        [at(1, 1, 1, INS, 2), at(2, 1, 1, INS, 1)],
        {},
        [(1, 1, INS, 2)],
        [],
        [],
    ),
    "lowest level x from the middle": (
        [at(3, 1, 1, INS, 30), at(1, 1, 2, INS, 10), at(2, 1, 3, INS, 20)],
        {},
        [(1, 2, INS, 10)],
        [],
        [],
    ),
}


@pytest.mark.parametrize("dedup", [False, True], ids=["plain", "row-deduplicate"])
@pytest.mark.parametrize("case", DEDUPLICATE_CASES.values(), ids=DEDUPLICATE_CASES.keys())
def test_lookup_merge_deduplicate(case, dedup: bool) -> None:
    records, high, written, changelog, deduplicated = case
    assert lookup_merge(records, high, dedup=dedup) == (
        written,
        deduplicated if dedup else changelog,
    )


def test_lookup_merge_without_lookup_is_the_lookup_merge_function() -> None:
    """Compactions not involving level 0: only the lowest level above 0 is merged."""
    records = [at(3, 1, 1, INS, 100), at(2, 1, 2, INS, 10), at(1, 1, 3, INS, 1)]
    records += [at(2, 2, 4, INS, 7), at(3, 2, 1, INS, 5)]
    assert lookup_merge(records, options=SUM) == ([(1, 3, INS, 1), (2, 4, INS, 7)], [])


# LookupChangelogMergeFunctionWrapperTest.testSum: (slice, levels, written, changelog, deduped).
SUM_CASES = {
    "without level 0": (
        [at(2, 1, 1, INS, 1), at(1, 1, 2, INS, 2)],
        {},
        [(1, 2, INS, 2)],
        [],
        [],
    ),
    "level 0 and level x": (
        [at(1, 1, 1, INS, 1), at(0, 1, 2, INS, 2)],
        {},
        [(1, 2, INS, 3)],
        [(1, 1, UB, 1), (1, 2, UA, 3)],
        [(1, 1, UB, 1), (1, 2, UA, 3)],
    ),
    "level 0 and many levels x": (
        [at(3, 1, 1, INS, 1), at(2, 1, 2, INS, 1), at(1, 1, 3, INS, 2), at(0, 1, 4, INS, 2)],
        {},
        [(1, 4, INS, 4)],
        [(1, 3, UB, 2), (1, 4, UA, 4)],
        [(1, 3, UB, 2), (1, 4, UA, 4)],
    ),
    "result not changed": (
        [at(1, 1, 1, INS, 2), at(0, 1, 2, INS, 0)],
        {},
        [(1, 2, INS, 2)],
        [(1, 1, UB, 2), (1, 2, UA, 2)],
        [],
    ),
    "level 0 only, lookup hit": (
        [at(0, 1, 2, INS, 1)],
        {4: {"h": [kv(1, 1, 5)]}},
        [(1, 2, INS, 6)],
        [(1, 1, UB, 5), (1, 2, UA, 6)],
        [(1, 1, UB, 5), (1, 2, UA, 6)],
    ),
}


@pytest.mark.parametrize("dedup", [False, True], ids=["plain", "row-deduplicate"])
@pytest.mark.parametrize("case", SUM_CASES.values(), ids=SUM_CASES.keys())
def test_lookup_merge_aggregation_sum(case, dedup: bool) -> None:
    records, high, written, changelog, deduplicated = case
    assert lookup_merge(records, high, options=SUM, dedup=dedup) == (
        written,
        deduplicated if dedup else changelog,
    )


def vw(level: int, key: int, seq: int, v: int | None, w: int | None) -> dict:
    """A slice record of the (k, v, w) table."""
    return at(level, key, seq, INS, v, w=w)


def run_vw(
    records: list[dict],
    options: dict[str, str],
    compared: tuple[str, ...] | None,
    high: Levels | None = None,
) -> tuple[list[Row], list[Row]]:
    """LookupMerge over the (k, v, w) table, looking keys up in `high` if given."""
    lookup = None
    if high is not None:
        files = {name: records for level in high.values() for name, records in level.items()}
        spec = [(lv, [meta(n, lv, r) for n, r in named.items()]) for lv, named in high.items()]
        lookup = LevelLookup(spec, KEYS, Opener(files, schema=KV_VW), with_values=True)
    sink = Sink(KV_VW)
    merge = LookupMerge(
        engine(options, VALUES_VW),
        KEYS,
        ChangelogRule(tuple(KV_VW.names), compared),
        drop_delete=False,
        lookup=lookup,
        changelog=sink,
    )
    return rows(merge(piece(records, KV_VW)), KV_VW), sink.rows


def found_vw(seq: int, value: int) -> dict:
    """A level-3 record of key 1 with v = w = value."""
    return {**kv(1, seq, value), "w": value}


@pytest.mark.parametrize(
    ("found", "records", "written", "changelog"),
    [
        # the looked-up record has the higher sequence.field: 3 -> 3 (with its sequence number)
        (
            found_vw(1, 3),
            [vw(0, 1, 2, 2, 2)],
            [(1, 1, INS, 3, 3)],
            [(1, 1, UB, 3, 3), (1, 1, UA, 3, 3)],
        ),
        # the lower: 1 -> 2
        (
            found_vw(1, 1),
            [vw(0, 1, 2, 2, 2)],
            [(1, 2, INS, 2, 2)],
            [(1, 1, UB, 1, 1), (1, 2, UA, 2, 2)],
        ),
        # in the middle of two level-0 records: 2 -> 3
        (
            found_vw(1, 2),
            [vw(0, 1, 2, 1, 1), vw(0, 1, 3, 3, 3)],
            [(1, 3, INS, 3, 3)],
            [(1, 1, UB, 2, 2), (1, 3, UA, 3, 3)],
        ),
    ],
)
def test_looked_up_record_is_merged_in_sequence_field_order(found, records, written, changelog):
    """LookupChangelogMergeFunctionWrapperTest.testMergeHighLevelOrder (sequence.field w)."""
    high = {3: {"h": [found]}}
    assert run_vw(records, {"sequence.field": "w"}, None, high) == (written, changelog)


def test_row_deduplicate_ignores_fields() -> None:
    """LookupChangelogMergeFunctionWrapperTest.testDeduplicateWithIgnoreFields (w ignored)."""
    options = {"sequence.field": "w"}
    same = [vw(2, 1, 1, 1, 1), vw(0, 1, 2, 1, 2)]
    assert run_vw(same, options, ("k", "v")) == ([(1, 2, INS, 1, 2)], [])
    different = [vw(1, 1, 1, 1, 1), vw(0, 1, 2, 2, 2)]
    assert run_vw(different, options, ("k", "v")) == (
        [(1, 2, INS, 2, 2)],
        [(1, 1, UB, 1, 1), (1, 2, UA, 2, 2)],
    )
    # Without row-deduplicate the ignored field's change is still a change.
    assert run_vw(same, options, None) == (
        [(1, 2, INS, 1, 2)],
        [(1, 1, UB, 1, 1), (1, 2, UA, 1, 2)],
    )


def test_row_deduplicate_compares_nulls_as_equal() -> None:
    same = [vw(1, 1, 1, 1, None), vw(0, 1, 2, 1, None)]
    assert run_vw(same, {}, ("k", "v", "w")) == ([(1, 2, INS, 1, None)], [])
    changed = [vw(1, 1, 1, 1, None), vw(0, 1, 2, 1, 3)]
    assert run_vw(changed, {}, ("k", "v", "w"))[1] == [(1, 1, UB, 1, None), (1, 2, UA, 1, 3)]


def test_partial_update_merges_level_0_into_the_level_x_row() -> None:
    options = {"merge-engine": "partial-update"}
    records = [vw(2, 1, 1, 9, 9), vw(1, 1, 2, 1, 1), vw(0, 1, 3, None, 5)]
    assert run_vw(records, options, None) == (
        [(1, 3, INS, 1, 5)],
        [(1, 2, UB, 1, 1), (1, 3, UA, 1, 5)],
    )


def test_drop_delete_drops_the_delete_but_keeps_its_changelog() -> None:
    records = [at(1, 1, 1, INS, 1), at(0, 1, 2, DEL, 1), at(0, 2, 3, UB, 2), at(0, 3, 4, INS, 3)]
    assert lookup_merge(records, {}, drop_delete=True) == (
        [(3, 4, INS, 3)],
        [(1, 1, DEL, 1), (3, 4, INS, 3)],
    )


def test_lookup_hits_are_marked_deleted_at_their_file_and_position() -> None:
    high = {
        1: {"a": [kv(1, 1, 10), kv(3, 1, 30), kv(4, 1, 40)]},
        2: {"b": [kv(2, 1, 20), kv(3, 1, 99), kv(5, 1, 50)], "c": [kv(7, 1, 70), kv(8, 1, 80)]},
    }
    vectors = BucketVectors({"c": BitMap([0])}, bitmap64=False)
    records = [at(0, k, 5, INS, k) for k in (2, 3, 6, 8)]
    written, changelog = lookup_merge(records, high, vectors=vectors)
    assert written == [(2, 5, INS, 2), (3, 5, INS, 3), (6, 5, INS, 6), (8, 5, INS, 8)]
    assert changelog == [
        (2, 1, UB, 20),
        (2, 5, UA, 2),
        (3, 1, UB, 30),
        (3, 5, UA, 3),
        (6, 5, INS, 6),
        (8, 1, UB, 80),
        (8, 5, UA, 8),
    ]
    # key 3 is found in level 1 (a, position 1), so level 2's row of it stays
    assert vectors.vectors == {"a": BitMap([1]), "b": BitMap([0]), "c": BitMap([0, 1])}
    assert vectors.modified


def test_keys_with_a_record_above_level_0_are_not_looked_up() -> None:
    """Key 1's level-1 record is its before; level 2's row of key 1 is neither read nor marked."""
    high = {2: {"h": [kv(1, 1, 100), kv(2, 1, 200)]}}
    vectors = BucketVectors({}, bitmap64=False)
    records = [at(1, 1, 2, INS, 10), at(0, 1, 3, INS, 11), at(0, 2, 4, INS, 21)]
    written, changelog = lookup_merge(records, high, vectors=vectors)
    assert written == [(1, 3, INS, 11), (2, 4, INS, 21)]
    assert changelog == [(1, 2, UB, 10), (1, 3, UA, 11), (2, 1, UB, 200), (2, 4, UA, 21)]
    assert vectors.vectors == {"h": BitMap([1])}


def test_keys_without_level_0_produce_no_changelog_and_no_lookup() -> None:
    high = {3: {"h": [kv(1, 1, 100), kv(2, 1, 200)]}}
    lookup, opener = lookup_of(high, with_values=True)
    vectors = BucketVectors({}, bitmap64=False)
    sink = Sink()
    merge = LookupMerge(
        engine(SUM),
        KEYS,
        rule(False),
        drop_delete=False,
        lookup=lookup,
        vectors=vectors,
        changelog=sink,
    )
    written = merge(piece([at(2, 1, 1, INS, 1), at(1, 1, 2, INS, 2), at(1, 2, 3, INS, 5)]))
    assert rows(written) == [(1, 2, INS, 2), (2, 3, INS, 5)]
    assert sink.tables == []
    assert opener.opened == []
    assert vectors.vectors == {}


def test_position_only_lookup_marks_rows_without_merging_them() -> None:
    """Deletion vectors on a deduplicate table: the hit is marked, level 0 alone is the result."""
    high = {2: {"h": [kv(1, 1, 100), kv(2, 1, 200)]}}
    vectors = BucketVectors({}, bitmap64=False)
    written, changelog = lookup_merge(
        [at(0, 2, 5, INS, 20)], high, vectors=vectors, with_values=False
    )
    assert written == [(2, 5, INS, 20)]
    assert changelog == [(2, 5, INS, 20)]
    assert vectors.vectors == {"h": BitMap([1])}


def test_changelog_is_in_key_order_across_a_slice() -> None:
    """Every kind of change in one slice, given in scrambled order: keys ascend, -U before +U."""
    high = {2: {"h": [kv(4, 1, 40), kv(6, 1, 60)]}}
    records = [
        at(0, 6, 9, INS, 61),
        at(0, 5, 8, INS, 50),
        at(1, 3, 2, INS, 30),
        at(0, 4, 7, DEL, 40),
        at(0, 3, 6, INS, 31),
        at(2, 2, 1, INS, 20),
        at(1, 2, 3, INS, 21),
        at(0, 1, 5, INS, 10),
    ]
    written, changelog = lookup_merge(records, high)
    assert written == [
        (1, 5, INS, 10),
        (2, 3, INS, 21),
        (3, 6, INS, 31),
        (4, 7, DEL, 40),
        (5, 8, INS, 50),
        (6, 9, INS, 61),
    ]
    assert changelog == [
        (1, 5, INS, 10),
        (3, 2, UB, 30),
        (3, 6, UA, 31),
        (4, 1, DEL, 40),
        (5, 8, INS, 50),
        (6, 1, UB, 60),
        (6, 9, UA, 61),
    ]


def test_no_sink_no_changelog() -> None:
    merge = LookupMerge(engine(), KEYS, rule(False), drop_delete=True)
    written = merge(piece([at(1, 1, 1, INS, 1), at(0, 1, 2, INS, 2), at(0, 2, 3, DEL, 2)]))
    assert rows(written) == [(1, 2, INS, 2)]


FIRST_ROW = {"merge-engine": "first-row"}


def first_row(
    records: list[dict], high: Levels, options: dict[str, str] | None = None
) -> tuple[list[Row], list[Row]]:
    """Run FirstRowMerge on one slice: written, changelog."""
    sink = Sink()
    merge = FirstRowMerge(
        engine(options or FIRST_ROW),
        KEYS,
        KV.names,
        drop_delete=False,
        lookup=lookup_of(high, with_values=False)[0],
        changelog=sink,
    )
    return rows(merge(piece(records))), sink.rows


def test_first_row() -> None:
    """LookupChangelogMergeFunctionWrapperTest.testFirstRow, one key per case in one slice."""
    high = {5: {"h": [kv(5, 0, 0), kv(7, 0, 0)]}}
    records = [
        # without level 0
        at(2, 1, 1, INS, 1),
        at(1, 1, 2, INS, 2),
        # with level 0 and level x
        at(1, 2, 1, INS, 1),
        at(0, 2, 2, INS, 2),
        # with level 0 and many levels x
        at(3, 3, 1, INS, 1),
        at(2, 3, 2, INS, 1),
        at(1, 3, 3, INS, 2),
        at(0, 3, 4, INS, 2),
        # level 0 only, not above: new, in the changelog as written (kind unchanged)
        at(0, 4, 2, INS, 0),
        at(0, 6, 3, UA, 6),
        at(0, 6, 4, INS, 7),
        # level 0 only, above: dropped
        at(0, 5, 2, INS, 0),
        at(0, 7, 2, INS, 0),
        at(0, 7, 3, INS, 1),
    ]
    written, changelog = first_row(records, high)
    assert written == [
        (1, 1, INS, 1),
        (2, 1, INS, 1),
        (3, 1, INS, 1),
        (4, 2, INS, 0),
        (6, 3, UA, 6),
    ]
    assert changelog == [(4, 2, INS, 0), (6, 3, UA, 6)]


def test_first_row_without_anything_above() -> None:
    written, changelog = first_row([at(0, 1, 1, INS, 1), at(0, 2, 1, INS, 2)], {})
    assert written == changelog == [(1, 1, INS, 1), (2, 1, INS, 2)]


def test_first_row_ignored_high_level_retraction_is_not_a_high_level_record() -> None:
    """FirstRowMergeFunction.add returns on a retraction (ignore-delete) before it sets
    containsHighLevel, so FirstRowMergeFunctionWrapper treats such a key as level-0 only: it is
    looked up, dropped if found above, else written and in the changelog."""
    options = {**FIRST_ROW, "ignore-delete": "true"}
    records = [at(1, 1, 1, DEL, 1), at(0, 1, 2, INS, 2), at(1, 2, 3, DEL, 1), at(0, 2, 4, INS, 2)]
    high = {3: {"h": [kv(2, 0, 0)]}}
    assert first_row(records, high, options) == ([(1, 2, INS, 2)], [(1, 2, INS, 2)])


def full_changelog(
    records: list[dict],
    *,
    dedup: bool = False,
    options: dict[str, str] | None = None,
    lookup_merge: bool = False,
) -> tuple[list[Row], list[Row]]:
    """Run FullChangelogMerge (max level 3) on one slice: written, changelog."""
    sink = Sink()
    merge = FullChangelogMerge(
        engine(options),
        KEYS,
        rule(dedup),
        max_level=3,
        lookup_merge=lookup_merge,
        changelog=sink,
    )
    return rows(merge(piece(records))), sink.rows


# FullChangelogMergeFunctionWrapperTestBase.INPUT_KVS, case i as key i + 1 (MAX_LEVEL = 3).
FULL_INPUT = [
    at(0, 1, 1, INS, 1),  # one insert, not from the top level
    at(0, 2, 2, DEL, 0),  # one delete, not from the top level
    at(3, 3, 3, INS, 3),  # one insert, from the top level
    at(0, 4, 4, INS, 3),  # many records, none from the top level
    at(0, 4, 5, INS, -3),
    at(0, 5, 6, INS, 3),
    at(0, 5, 7, DEL, 3),
    at(3, 6, 8, INS, 3),  # many records, one from the top level
    at(0, 6, 9, INS, -3),
    at(3, 7, 10, INS, 3),
    at(0, 7, 11, DEL, 3),
    at(3, 8, 12, INS, 3),
    at(0, 8, 13, UB, 3),
    at(3, 9, 14, INS, 3),
    at(0, 9, 15, INS, 3),
]
FULL_WRITTEN = [(1, 1, INS, 1), (3, 3, INS, 3), (4, 5, INS, -3), (6, 9, INS, -3), (9, 15, INS, 3)]
FULL_CHANGELOG = [
    (1, 1, INS, 1),
    (4, 5, INS, -3),
    (6, 8, UB, 3),
    (6, 9, UA, -3),
    (7, 10, DEL, 3),
    (8, 12, DEL, 3),
    (9, 14, UB, 3),
    (9, 15, UA, 3),
]


@pytest.mark.parametrize("dedup", [False, True], ids=["plain", "row-deduplicate"])
def test_full_changelog(dedup: bool) -> None:
    expected = FULL_CHANGELOG[:-2] if dedup else FULL_CHANGELOG
    assert full_changelog(FULL_INPUT, dedup=dedup) == (FULL_WRITTEN, expected)


@pytest.mark.parametrize("dedup", [False, True], ids=["plain", "row-deduplicate"])
@pytest.mark.parametrize("case", range(9))
def test_full_changelog_key_by_key(case: int, dedup: bool) -> None:
    """The same cases each alone in its slice."""
    key = case + 1
    expected = FULL_CHANGELOG[:-2] if dedup else FULL_CHANGELOG
    assert full_changelog([r for r in FULL_INPUT if r["k"] == key], dedup=dedup) == (
        [row for row in FULL_WRITTEN if row[0] == key],
        [row for row in expected if row[0] == key],
    )


def test_full_changelog_row_deduplicate_ignores_fields() -> None:
    """WithChangelogRowDeduplicateMergeFunctionTest.testFullChangelogMergeFunctionWrapperWith-
    IgnoreFields (w ignored)."""

    def run(records: list[dict]) -> tuple[list[Row], list[Row]]:
        sink = Sink(KV_VW)
        merge = FullChangelogMerge(
            engine({}, VALUES_VW),
            KEYS,
            ChangelogRule(tuple(KV_VW.names), ("k", "v")),
            max_level=3,
            lookup_merge=False,
            changelog=sink,
        )
        return rows(merge(piece(records, KV_VW)), KV_VW), sink.rows

    assert run([vw(3, 1, 1, 1, 1), vw(0, 1, 2, 1, 2)]) == ([(1, 2, INS, 1, 2)], [])
    assert run([vw(3, 1, 1, 1, 1), vw(0, 1, 2, 2, 2)]) == (
        [(1, 2, INS, 2, 2)],
        [(1, 1, UB, 1, 1), (1, 2, UA, 2, 2)],
    )


def test_full_changelog_with_lookup_merge_compares_against_the_top_level() -> None:
    """A lookup table's full compaction merges level 0 with the lowest level above it only,
    but its changelog's before is still the top level's record."""
    records = [at(3, 1, 1, INS, 100), at(1, 1, 2, INS, 5), at(0, 1, 3, INS, 1)]
    records += [at(3, 2, 4, INS, 7), at(2, 2, 5, INS, 3)]
    assert full_changelog(records, options=SUM, lookup_merge=True) == (
        [(1, 3, INS, 6), (2, 5, INS, 3)],
        [(1, 1, UB, 100), (1, 3, UA, 6), (2, 4, UB, 7), (2, 5, UA, 3)],
    )
    # Without it the aggregation folds every record.
    assert full_changelog(records, options=SUM)[0] == [(1, 3, INS, 106), (2, 5, INS, 10)]
