"""Merge engine options: what builds, and what fails up front with the offending key named."""

from __future__ import annotations

import pyarrow as pa
import pytest
from pypaimon.schema.schema import Schema
from pypaimon.schema.table_schema import TableSchema

from dagster_paimon.errors import CorruptMetadataError, InvalidOptionError
from dagster_paimon.lsm.merge.functions import (
    AggregateMergeFunction,
    DeduplicateMergeFunction,
    FirstRowMergeFunction,
)
from dagster_paimon.lsm.merge.kway import MergeEngine
from dagster_paimon.lsm.merge.partial_update import PartialUpdateMergeFunction
from dagster_paimon.options import ignore_delete

VALUES = pa.schema(
    [
        pa.field("k", pa.int32(), False),
        pa.field("v", pa.int64()),
        pa.field("s", pa.string()),
        pa.field("l", pa.list_(pa.int32())),
        pa.field("g", pa.int64()),
    ]
)


def build(options: dict[str, str]) -> MergeEngine:
    """Build for table (k, v, s, l, g) keyed by k."""
    return MergeEngine.from_options(VALUES, ["k"], [], options)


def test_engines_by_name() -> None:
    """merge-engine picks the function; deduplicate is the default."""
    assert isinstance(build({}).function, DeduplicateMergeFunction)
    assert isinstance(build({"merge-engine": "First-Row"}).function, FirstRowMergeFunction)
    assert isinstance(
        build({"merge-engine": "partial-update"}).function, PartialUpdateMergeFunction
    )
    assert isinstance(build({"merge-engine": "aggregation"}).function, AggregateMergeFunction)


def test_ignore_delete_aliases_and_precedence() -> None:
    """ignore-delete wins over its fallback keys, which are read in Java's order."""
    assert ignore_delete({"first-row.ignore-delete": "TRUE"})
    options = {"ignore-delete": "false", "deduplicate.ignore-delete": "true"}
    assert not build(options).function.ignore_delete
    assert build({"partial-update.ignore-delete": "true"}).function.ignore_delete


def test_sequence_field_and_order() -> None:
    """sequence.field is a trimmed comma list; sort order is case-insensitive."""
    built = build({"sequence.field": " g , v", "sequence.field.sort-order": "DESCENDING"})
    assert (built.sequence_fields, built.sequence_ascending) == (("g", "v"), False)


def test_for_table_reads_a_pypaimon_schema() -> None:
    """The lead's entry point: a pypaimon TableSchema with partition keys."""
    arrow = pa.schema(
        [
            pa.field("p", pa.string(), False),
            pa.field("id", pa.int64(), False),
            pa.field("n", pa.int64()),
        ]
    )
    schema = TableSchema.from_schema(
        0,
        Schema.from_pyarrow_schema(
            arrow,
            partition_keys=["p"],
            primary_keys=["p", "id"],
            options={"merge-engine": "aggregation", "fields.n.aggregate-function": "sum"},
        ),
    )
    built = MergeEngine.for_table(schema)
    assert built.key_columns == ("_KEY_id",)
    assert [a.name for a in built.function.aggregators] == ["primary-key", "primary-key", "sum"]


BAD_OPTIONS = [
    ({"merge-engine": "replace"}, "merge-engine"),
    ({"ignore-delete": "yes"}, "ignore-delete"),
    ({"first-row.ignore-delete": "1"}, "first-row.ignore-delete"),
    ({"sequence.field": "nope"}, "sequence.field"),
    ({"sequence.field": "g,g"}, "sequence.field"),
    ({"sequence.field": "g", "merge-engine": "first-row"}, "sequence.field"),
    ({"sequence.field.sort-order": "up"}, "sequence.field.sort-order"),
    ({"fields.nope.aggregate-function": "sum"}, "fields.nope.aggregate-function"),
    (
        {"merge-engine": "aggregation", "fields.v.aggregate-function": "count"},
        "fields.v.aggregate-function",
    ),
    ({"merge-engine": "aggregation", "fields.v.aggregate-function": "hll_sketch"}, "not supported"),
    (
        {"merge-engine": "aggregation", "fields.default-aggregate-function": "avg"},
        "fields.default-aggregate-function",
    ),
    (
        {"merge-engine": "aggregation", "fields.s.aggregate-function": "sum"},
        "fields.s.aggregate-function",
    ),
    ({"merge-engine": "aggregation", "fields.v.aggregate-function": "bool_or"}, "BOOLEAN"),
    ({"merge-engine": "aggregation", "fields.v.aggregate-function": "listagg"}, "STRING"),
    ({"merge-engine": "aggregation", "fields.v.aggregate-function": "collect"}, "ARRAY"),
    ({"merge-engine": "aggregation", "fields.l.aggregate-function": "merge_map"}, "MAP"),
    ({"merge-engine": "aggregation", "fields.l.aggregate-function": "max"}, "comparable"),
    (
        {"merge-engine": "aggregation", "fields.v.ignore-retract": "maybe"},
        "fields.v.ignore-retract",
    ),
    (
        {
            "merge-engine": "aggregation",
            "sequence.field": "g",
            "fields.g.aggregate-function": "sum",
        },
        "fields.g.aggregate-function",
    ),
    (
        {
            "merge-engine": "aggregation",
            "aggregation.remove-record-on-delete": "true",
            "fields.v.ignore-retract": "true",
        },
        "aggregation.remove-record-on-delete",
    ),
    (
        {
            "merge-engine": "partial-update",
            "ignore-delete": "true",
            "partial-update.remove-record-on-delete": "true",
        },
        "partial-update.remove-record-on-delete",
    ),
    (
        {
            "merge-engine": "partial-update",
            "fields.g.sequence-group": "v",
            "partial-update.remove-record-on-delete": "true",
        },
        "sequence-group",
    ),
    (
        {
            "merge-engine": "partial-update",
            "fields.g.sequence-group": "v",
            "ignore-delete": "true",
            "partial-update.remove-record-on-sequence-group": "g",
        },
        "partial-update.remove-record-on-sequence-group",
    ),
    (
        {
            "merge-engine": "partial-update",
            "fields.g.sequence-group": "v",
            "partial-update.remove-record-on-sequence-group": "v",
        },
        "partial-update.remove-record-on-sequence-group",
    ),
    ({"merge-engine": "partial-update", "fields.g.sequence-group": "k"}, "primary key"),
    ({"merge-engine": "partial-update", "fields.k.sequence-group": "v"}, "primary key"),
    (
        {"merge-engine": "partial-update", "fields.g.sequence-group": "nope"},
        "fields.g.sequence-group",
    ),
    (
        {
            "merge-engine": "partial-update",
            "fields.g.sequence-group": "v",
            "fields.s.sequence-group": "v",
        },
        "already in sequence group",
    ),
    ({"merge-engine": "partial-update", "fields.v.aggregate-function": "sum"}, "sequence group"),
    (
        {"merge-engine": "partial-update", "fields.default-aggregate-function": "max"},
        "sequence group",
    ),
    (
        {"merge-engine": "partial-update", "fieldsx.g.sequence-group": "v"},
        "fieldsx.g.sequence-group",
    ),
]


@pytest.mark.parametrize(("options", "message"), BAD_OPTIONS)
def test_bad_options_fail_naming_the_key(options: dict[str, str], message: str) -> None:
    """Every rejected option names what is wrong."""
    with pytest.raises(InvalidOptionError, match=message):
        build(options)


def test_partial_update_accepts_last_non_null_value_without_a_group() -> None:
    """The one aggregate function partial-update allows outside sequence groups."""
    built = build(
        {"merge-engine": "partial-update", "fields.v.aggregate-function": "last_non_null_value"}
    )
    assert set(built.function.aggregators) == {"k", "v"}


def test_key_fields_must_be_value_fields() -> None:
    """A primary key missing from the schema is a programming error, not an option error."""
    with pytest.raises(CorruptMetadataError, match="not in the value schema"):
        MergeEngine.from_options(VALUES, ["missing"], [], {})
