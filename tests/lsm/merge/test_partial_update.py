"""Partial-update merge, table-driven: deletes, NOT NULL, sequence groups (Paimon docs)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from dagster_paimon.errors import MergeError
from tests.lsm import merge_model as m

INS, UB, DEL = 0, 1, 3


def merge(
    fields: list[pa.Field], options: dict[str, str], records: list[tuple[int, dict]]
) -> dict | None:
    """Merge key 1's records (each its own run, in order) of table (k, *fields)."""
    values = pa.schema([pa.field("k", pa.int32(), False), *fields])
    runs = [
        [{"_KEY_k": 1, m.SEQ: seq + 1, m.KIND: kind, "k": 1, **row}]
        for seq, (kind, row) in enumerate(records)
    ]
    out = m.run_merge(runs, values, ["k"], {"merge-engine": "partial-update", **options})
    return out[0] if out else None


AB = [pa.field("a", pa.int32()), pa.field("b", pa.string())]


def test_newer_non_null_fields_overwrite() -> None:
    """Nulls never overwrite; the result is +I with the latest sequence number."""
    row = merge(AB, {}, [(INS, {"a": 1, "b": None}), (INS, {"a": None, "b": "x"})])
    assert (row[m.KIND], row[m.SEQ], row["a"], row["b"]) == (INS, 2, 1, "x")


def test_null_in_not_null_field_fails_only_when_merged() -> None:
    """updateNonNullFields checks nullability; a lone record is not merged at all."""
    fields = [pa.field("a", pa.int32(), nullable=False)]
    with pytest.raises(MergeError, match="'a' can not be null"):
        merge(fields, {}, [(INS, {"a": 1}), (INS, {"a": None})])
    assert merge(fields, {}, [(INS, {"a": None})])["a"] is None


def test_retraction_fails_by_default() -> None:
    """Java names the three ways out."""
    with pytest.raises(MergeError, match=r"ignore-delete.*remove-record-on-delete"):
        merge(AB, {}, [(INS, {"a": 1}), (DEL, {"a": 1})])


def test_ignore_delete_skips_retractions_but_a_leading_one_initializes_the_row() -> None:
    """initRow runs before the ignore-delete check, and only adds set the sequence number."""
    options = {"ignore-delete": "true"}
    records = [(DEL, {"a": 1, "b": "gone"}), (INS, {"a": None, "b": "x"}), (UB, {"a": 9})]
    row = merge(AB, options, records)
    assert (row[m.KIND], row[m.SEQ], row["a"], row["b"]) == (INS, 2, 1, "x")


def test_ignore_delete_with_only_retractions_is_a_delete_with_sequence_zero() -> None:
    """No insert met: DELETE, and latestSequenceNumber was never set."""
    row = merge(AB, {"ignore-delete": "true"}, [(DEL, {"a": 1}), (UB, {"a": 2})])
    assert (row[m.KIND], row[m.SEQ], row["a"]) == (DEL, 0, 1)


def test_remove_record_on_delete() -> None:
    """-D resets the row to its own values and makes a DELETE; later adds build on that row."""
    options = {"partial-update.remove-record-on-delete": "true"}
    row = merge(AB, options, [(INS, {"a": 1, "b": "x"}), (DEL, {"a": 2, "b": "y"})])
    assert (row[m.KIND], row[m.SEQ], row["a"], row["b"]) == (DEL, 2, 2, "y")
    records = [(INS, {"a": 1, "b": "x"}), (DEL, {"a": 2, "b": "y"}), (INS, {"a": 3, "b": None})]
    row = merge(AB, options, records)
    assert (row[m.KIND], row["a"], row["b"]) == (INS, 3, "y")
    row = merge(AB, options, [(INS, {"a": 1}), (UB, {"a": 5})])
    assert (row[m.KIND], row[m.SEQ], row["a"]) == (INS, 2, 1)


def test_remove_record_on_delete_drops_with_drop_delete() -> None:
    """The DELETE result is dropped at the highest level."""
    values = pa.schema([pa.field("k", pa.int32(), False), *AB])
    runs = [
        [{"_KEY_k": 1, m.SEQ: 1, m.KIND: INS, "k": 1, "a": 1, "b": "x"}],
        [{"_KEY_k": 1, m.SEQ: 2, m.KIND: DEL, "k": 1, "a": 1, "b": "x"}],
    ]
    options = {"merge-engine": "partial-update", "partial-update.remove-record-on-delete": "true"}
    assert m.run_merge(runs, values, ["k"], options, drop_delete=True) == []


GROUPED = [
    pa.field("a", pa.int32()),
    pa.field("b", pa.int32()),
    pa.field("g_1", pa.int32()),
    pa.field("c", pa.int32()),
    pa.field("d", pa.int32()),
    pa.field("g_2", pa.int32()),
]
GROUP_OPTIONS = {"fields.g_1.sequence-group": "a,b", "fields.g_2.sequence-group": "c,d"}


def _values(row: dict) -> tuple:
    return tuple(row[n] for n in ("a", "b", "g_1", "c", "d", "g_2"))


def _grouped(a, b, g_1, c, d, g_2) -> dict:
    return {"a": a, "b": b, "g_1": g_1, "c": c, "d": d, "g_2": g_2}


def test_sequence_groups_update_only_newer_groups() -> None:
    """The sequence-group example of Paimon's partial-update docs."""
    records = [
        (INS, _grouped(1, 1, 1, 1, 1, 1)),
        (INS, _grouped(2, 2, 2, 2, 2, None)),
    ]
    assert _values(merge(GROUPED, GROUP_OPTIONS, records)) == (2, 2, 2, 1, 1, 1)
    records.append((INS, _grouped(3, 3, 1, 3, 3, 3)))
    assert _values(merge(GROUPED, GROUP_OPTIONS, records)) == (2, 2, 2, 3, 3, 3)


def test_sequence_group_overwrites_with_nulls_when_newer() -> None:
    """Inside a newer group even null values are taken (unlike plain partial update)."""
    records = [
        (INS, _grouped(1, 1, 1, None, None, None)),
        (INS, _grouped(None, 5, 2, None, None, None)),
    ]
    assert _values(merge(GROUPED, GROUP_OPTIONS, records))[:3] == (None, 5, 2)


def test_aggregation_inside_sequence_groups() -> None:
    """The docs' example: sum in one group, first_value in another, a null group is skipped."""
    fields = [
        pa.field("a", pa.int32()),
        pa.field("g_1", pa.int32()),
        pa.field("b", pa.int32()),
        pa.field("g_2", pa.int32()),
    ]
    options = {
        "fields.a.aggregate-function": "sum",
        "fields.g_1.sequence-group": "a",
        "fields.g_2.sequence-group": "b",
        "fields.b.aggregate-function": "first_value",
    }
    records = [
        (INS, {"a": 1, "g_1": 1, "b": 1, "g_2": 1}),
        (INS, {"a": 2, "g_1": 2, "b": 2, "g_2": 2}),
    ]
    row = merge(fields, options, records)
    assert (row["a"], row["g_1"], row["b"], row["g_2"]) == (3, 2, 1, 2)
    records.append((INS, {"a": 3, "g_1": 3, "b": 3, "g_2": None}))
    row = merge(fields, options, records)
    assert (row["a"], row["g_1"], row["b"], row["g_2"]) == (6, 3, 1, 2)


def test_older_record_in_a_group_uses_reversed_aggregation() -> None:
    """aggReversed = agg(in, acc): an older last_value input loses, an older sum still adds."""
    fields = [pa.field("a", pa.int32()), pa.field("b", pa.int32()), pa.field("g", pa.int32())]
    options = {
        "fields.g.sequence-group": "a,b",
        "fields.a.aggregate-function": "sum",
        "fields.b.aggregate-function": "last_value",
    }
    records = [(INS, {"a": 1, "b": 1, "g": 5}), (INS, {"a": 10, "b": 10, "g": 3})]
    row = merge(fields, options, records)
    assert (row["a"], row["b"], row["g"]) == (11, 1, 5)


def test_retraction_in_a_sequence_group() -> None:
    """A newer retraction clears the group's plain fields and retracts its aggregates; an
    older one only retracts aggregates."""
    fields = [pa.field("a", pa.int32()), pa.field("s", pa.int32()), pa.field("g", pa.int32())]
    options = {"fields.g.sequence-group": "a,s", "fields.s.aggregate-function": "sum"}
    records = [(INS, {"a": 1, "s": 10, "g": 1}), (UB, {"a": 1, "s": 4, "g": 2})]
    row = merge(fields, options, records)
    assert (row[m.KIND], row["a"], row["s"], row["g"]) == (INS, None, 6, 2)
    records = [(INS, {"a": 1, "s": 10, "g": 5}), (UB, {"a": 1, "s": 4, "g": 2})]
    row = merge(fields, options, records)
    assert (row["a"], row["s"], row["g"]) == (1, 6, 5)


def test_remove_record_on_sequence_group() -> None:
    """A newer -D of the named group removes the whole row; an older one does not."""
    fields = [pa.field("a", pa.int32()), pa.field("g", pa.int32()), pa.field("x", pa.int32())]
    options = {
        "fields.g.sequence-group": "a",
        "partial-update.remove-record-on-sequence-group": "g",
    }
    row = merge(fields, options, [(INS, {"a": 1, "g": 1, "x": 7}), (DEL, {"a": 2, "g": 2})])
    assert (row[m.KIND], row["a"], row["g"], row["x"]) == (DEL, 2, 2, None)
    row = merge(fields, options, [(INS, {"a": 1, "g": 3, "x": 7}), (DEL, {"a": 2, "g": 2})])
    assert (row[m.KIND], row["a"], row["g"], row["x"]) == (INS, 1, 3, 7)


def test_multi_field_sequence_group_compares_lexicographically_nulls_first() -> None:
    """fields.g1,g2.sequence-group: (g1, g2) compared field by field, null smallest."""
    fields = [pa.field("a", pa.int32()), pa.field("g1", pa.int32()), pa.field("g2", pa.int32())]
    options = {"fields.g1,g2.sequence-group": "a"}
    records = [(INS, {"a": 1, "g1": 1, "g2": 5}), (INS, {"a": 2, "g1": 1, "g2": None})]
    assert merge(fields, options, records)["a"] == 1
    records = [(INS, {"a": 1, "g1": 1, "g2": 5}), (INS, {"a": 2, "g1": 2, "g2": None})]
    assert merge(fields, options, records)["a"] == 2
    records = [(INS, {"a": 1, "g1": None, "g2": 5}), (INS, {"a": 2, "g1": 1, "g2": 0})]
    assert merge(fields, options, records)["a"] == 2


def test_collect_keeps_the_accumulator_first_unless_wrapped_by_ignore_retract() -> None:
    """FieldCollectAgg overrides aggReversed with agg; FieldIgnoreRetractAgg does not forward
    it, so with ignore-retract an older record's elements come first."""
    fields = [pa.field("e", pa.list_(pa.int32())), pa.field("g", pa.int32())]
    options = {"fields.g.sequence-group": "e", "fields.e.aggregate-function": "collect"}
    records = [(INS, {"e": [1], "g": 5}), (INS, {"e": [2], "g": 3})]
    assert merge(fields, options, records)["e"] == [1, 2]
    options["fields.e.ignore-retract"] = "true"
    assert merge(fields, options, records)["e"] == [2, 1]


@pytest.mark.parametrize("engine", ["partial-update", "aggregation"])
def test_columns_named_like_internal_state(engine: str) -> None:
    """Column names such as 'delete' or 'sequence' are just columns."""
    fields = [pa.field(n, pa.int32()) for n in ("delete", "sequence", "meet_insert", "seen:x")]
    values = pa.schema([pa.field("k", pa.int32(), False), *fields])
    runs = [
        [{"_KEY_k": 1, m.SEQ: 1, m.KIND: INS, "k": 1, "delete": 1, "sequence": 2}],
        [{"_KEY_k": 1, m.SEQ: 2, m.KIND: INS, "k": 1, "meet_insert": 3, "seen:x": 4}],
    ]
    (row,) = m.run_merge(runs, values, ["k"], {"merge-engine": engine})
    assert (row[m.KIND], row[m.SEQ]) == (INS, 2)
    assert [row[f.name] for f in fields] == [1, 2, 3, 4]
