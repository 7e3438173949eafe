"""Aggregate functions, table-driven through the merge: one key, records in sequence order."""

from __future__ import annotations

from datetime import date
from decimal import Decimal
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from dagster_paimon.errors import MergeError
from tests.lsm import merge_model as m

INS, UB, DEL = 0, 1, 3


def aggregate(
    function: str | None,
    type_: pa.DataType,
    records: list[tuple[int, Any]],
    nullable: bool = True,
    **field_options: str,
) -> dict:
    """Merge one key's records (each in its own run, in order) under `function` on column v."""
    values = pa.schema([pa.field("k", pa.int32(), False), pa.field("v", type_, nullable)])
    options = {"merge-engine": "aggregation"}
    if function:
        options["fields.v.aggregate-function"] = function
    for name, value in field_options.items():
        key = name.replace("_", "-")
        options[key if "." in key else f"fields.v.{key}"] = value
    runs = [
        [{"_KEY_k": 1, m.SEQ: seq, m.KIND: kind, "k": 1, "v": value}]
        for seq, (kind, value) in enumerate(records)
    ]
    (row,) = m.run_merge(runs, values, ["k"], options)
    return row


def agg_value(function: str | None, type_: pa.DataType, records: list, **options: str) -> Any:
    """Just the aggregated value."""
    return aggregate(function, type_, records, **options)["v"]


CASES = [
    # sum: nulls skipped, retract subtracts, a null accumulator retracts to the negation
    ("sum", pa.int32(), [(INS, 1), (INS, 2), (INS, None)], {}, 3),
    ("sum", pa.int32(), [(INS, None), (INS, None)], {}, None),
    ("sum", pa.int32(), [(INS, 5), (DEL, 2)], {}, 3),
    ("sum", pa.int32(), [(INS, None), (UB, 4)], {}, -4),
    ("sum", pa.int64(), [(INS, 2**62), (INS, 2**62 - 1), (UB, 2**62)], {}, 2**62 - 1),
    ("sum", pa.float64(), [(INS, 1e16), (INS, 1.0), (INS, 1.0)], {}, 1e16),
    ("sum", pa.float32(), [(INS, 0.1), (INS, 0.2)], {}, float(np.float32(0.1) + np.float32(0.2))),
    (
        "sum",
        pa.decimal128(10, 2),
        [(INS, Decimal("1.10")), (INS, Decimal("2.25"))],
        {},
        Decimal("3.35"),
    ),
    (
        "sum",
        pa.decimal128(10, 2),
        [(INS, Decimal("5.00")), (DEL, Decimal("1.25"))],
        {},
        Decimal("3.75"),
    ),
    # DecimalUtils.add: a compact sum is not checked against the precision ...
    ("sum", pa.decimal128(5, 2), [(INS, Decimal("999.99"))] * 2, {}, Decimal("1999.98")),
    # ... only long overflow turns it null; wider decimals are null beyond their precision
    ("sum", pa.decimal128(18, 0), [(INS, 10**18 - 1)] * 10, {}, None),
    ("sum", pa.decimal128(20, 2), [(INS, Decimal("999999999999999999.99"))] * 2, {}, None),
    (
        "sum",
        pa.decimal128(20, 2),
        [(INS, Decimal("1.5")), (INS, Decimal("2.25"))],
        {},
        Decimal("3.75"),
    ),
    ("sum", pa.int32(), [(INS, 1), (UB, 5)], {"ignore_retract": "true"}, 1),
    # product: retract divides (truncating), a null side keeps the accumulator
    ("product", pa.int32(), [(INS, 2), (INS, 3), (INS, None)], {}, 6),
    ("product", pa.int32(), [(INS, None), (INS, 4)], {}, 4),
    ("product", pa.int32(), [(INS, 12), (UB, 5)], {}, 2),
    ("product", pa.int32(), [(INS, -7), (UB, 2)], {}, -3),
    ("product", pa.int32(), [(INS, None), (UB, 3)], {}, None),
    ("product", pa.float64(), [(INS, 1.5), (INS, 2.0), (UB, 4.0)], {}, 0.75),
    ("product", pa.decimal128(10, 2), [(INS, Decimal("1.25"))] * 2, {}, Decimal("1.56")),
    (
        "product",
        pa.decimal128(10, 3),
        [(INS, Decimal("-1.5")), (INS, Decimal("1.083"))],
        {},
        Decimal("-1.625"),
    ),
    (
        "product",
        pa.decimal128(10, 2),
        [(INS, Decimal("1.25")), (INS, Decimal("1.30"))],
        {},
        Decimal("1.63"),
    ),
    (
        "product",
        pa.decimal128(10, 2),
        [(INS, Decimal("-1.25")), (INS, Decimal("1.30"))],
        {},
        Decimal("-1.63"),
    ),
    ("product", pa.decimal128(4, 2), [(INS, Decimal("10.00"))] * 2, {}, None),
    # max / min over comparable types, nulls skipped
    ("max", pa.int32(), [(INS, 3), (INS, None), (INS, 7), (INS, 5)], {}, 7),
    ("min", pa.int32(), [(INS, 3), (INS, None), (INS, 7), (INS, 5)], {}, 3),
    ("max", pa.string(), [(INS, "b"), (INS, "ab"), (INS, "c")], {}, "c"),
    ("min", pa.string(), [(INS, "b"), (INS, "ab"), (INS, "c")], {}, "ab"),
    ("max", pa.bool_(), [(INS, False), (INS, True), (INS, None)], {}, True),
    ("min", pa.date32(), [(INS, date(2024, 5, 1)), (INS, date(2023, 1, 2))], {}, date(2023, 1, 2)),
    ("max", pa.int32(), [(INS, None), (INS, None)], {}, None),
    ("max", pa.int32(), [(INS, 3), (UB, 9), (INS, 1)], {"ignore_retract": "true"}, 3),
    # last_value / last_non_null_value (the default function)
    ("last_value", pa.int32(), [(INS, 1), (INS, None)], {}, None),
    ("last_value", pa.int32(), [(INS, 1), (UB, 1)], {}, None),
    ("last_value", pa.int32(), [(INS, 1), (DEL, 5)], {"ignore_retract": "true"}, 1),
    (None, pa.int32(), [(INS, 1), (INS, None)], {}, 1),
    ("last_non_null_value", pa.int32(), [(INS, 1), (UB, None)], {}, 1),
    ("last_non_null_value", pa.int32(), [(INS, 1), (UB, 2)], {}, None),
    ("last_non_null_value", pa.int32(), [(INS, 1), (UB, 2)], {"ignore_retract": "true"}, 1),
    # first_value keeps even a null first input; first_non_null_value waits for a value
    ("first_value", pa.int32(), [(INS, None), (INS, 1)], {}, None),
    ("first_value", pa.int32(), [(UB, 5), (INS, 1), (INS, 2)], {"ignore_retract": "true"}, 1),
    ("first_non_null_value", pa.int32(), [(INS, None), (INS, 2), (INS, 3)], {}, 2),
    ("first_not_null_value", pa.int32(), [(INS, None), (INS, 2), (INS, 3)], {}, 2),
    # booleans
    ("bool_and", pa.bool_(), [(INS, True), (INS, None), (INS, False)], {}, False),
    ("bool_and", pa.bool_(), [(INS, None), (INS, None)], {}, None),
    ("bool_or", pa.bool_(), [(INS, False), (INS, None), (INS, True)], {}, True),
    # listagg: blanks skipped, delimiter, distinct tokens (the first value is kept whole)
    (
        "listagg",
        pa.string(),
        [(INS, "a"), (INS, " "), (INS, ""), (INS, None), (INS, "b")],
        {},
        "a,b",
    ),
    ("listagg", pa.string(), [(INS, " "), (INS, "a")], {}, "a"),
    ("listagg", pa.string(), [(INS, "a"), (INS, "b")], {"list_agg_delimiter": ";"}, "a;b"),
    ("listagg", pa.large_string(), [(INS, "a"), (INS, "b")], {"list_agg_delimiter": "--"}, "a--b"),
    (
        "listagg",
        pa.string(),
        [(INS, "a,b"), (INS, "b,c"), (INS, "c,a,d")],
        {"distinct": "true"},
        "a,b,c,d",
    ),
    ("listagg", pa.string(), [(INS, "a,a"), (INS, "a,b")], {"distinct": "true"}, "a,a,b"),
    (
        "listagg",
        pa.large_string(),
        [(INS, "a;b"), (INS, "c;b")],
        {"distinct": "true", "list_agg_delimiter": ";"},
        "a;b;c",
    ),
    ("listagg", pa.string(), [(INS, "a"), (INS, " ,b, ")], {"distinct": "true"}, "a,b"),
    (
        "listagg",
        pa.string(),
        [(INS, "a b"), (INS, "b c")],
        {"distinct": "true", "list_agg_delimiter": ""},
        "a bc",
    ),
    ("listagg", pa.string(), [(INS, "a"), (DEL, "b")], {"ignore_retract": "true"}, "a"),
    # collect: concatenation, distinct, retract removes one match per retracted element
    (
        "collect",
        pa.list_(pa.int32()),
        [(INS, [1, 2]), (INS, None), (INS, [2, 3])],
        {},
        [1, 2, 2, 3],
    ),
    (
        "collect",
        pa.list_(pa.int32()),
        [(INS, [1, 2]), (INS, [2, 3])],
        {"distinct": "true"},
        [1, 2, 3],
    ),
    ("collect", pa.list_(pa.int32()), [(INS, [1, 1]), (INS, None)], {"distinct": "true"}, [1]),
    ("collect", pa.list_(pa.int32()), [(INS, None), (INS, None)], {}, None),
    ("collect", pa.list_(pa.int32()), [(INS, [1, 2, 1]), (UB, [1])], {}, [2, 1]),
    ("collect", pa.list_(pa.int32()), [(INS, [1, 2, 1]), (UB, [1, 1, 1])], {}, [2]),
    ("collect", pa.list_(pa.int32()), [(INS, [1]), (UB, [5])], {}, [1]),
    ("collect", pa.list_(pa.int32()), [(INS, None), (UB, [1])], {}, None),
    (
        "collect",
        pa.large_list(pa.string()),
        [(INS, ["x"]), (INS, [None, "x"])],
        {},
        ["x", None, "x"],
    ),
    (
        "collect",
        pa.list_(pa.struct([("a", pa.int32()), ("b", pa.list_(pa.int32()))])),
        [(INS, [{"a": 1, "b": [1]}]), (INS, [{"a": 1, "b": [1]}, {"a": 1, "b": None}])],
        {"distinct": "true"},
        [{"a": 1, "b": [1]}, {"a": 1, "b": None}],
    ),
    # merge_map: later values win, retract removes keys
    (
        "merge_map",
        pa.map_(pa.string(), pa.int32()),
        [(INS, [("a", 1), ("b", 2)]), (INS, [("b", 3), ("c", None)])],
        {},
        [("a", 1), ("b", 3), ("c", None)],
    ),
    (
        "merge_map",
        pa.map_(pa.string(), pa.int32()),
        [(INS, None), (INS, [("a", 1)])],
        {},
        [("a", 1)],
    ),
    (
        "merge_map",
        pa.map_(pa.int32(), pa.string()),
        [(INS, [(1, "x"), (2, "y")]), (UB, [(1, "zzz")])],
        {},
        [(2, "y")],
    ),
    ("merge_map", pa.map_(pa.int32(), pa.string()), [(INS, [(1, "x")]), (UB, [])], {}, [(1, "x")]),
]


@pytest.mark.parametrize(("function", "type_", "records", "options", "expected"), CASES)
def test_aggregate_function(function, type_, records, options, expected) -> None:
    """Each built-in function as Java's Field*Agg computes it."""
    assert agg_value(function, type_, records, **options) == expected


ERROR_CASES = [
    ("sum", pa.int8(), [(INS, 100), (INS, 100)], "overflow"),
    ("sum", pa.int8(), [(INS, 100), (INS, 100), (UB, 100)], "overflow"),
    ("sum", pa.int8(), [(INS, None), (UB, -128)], "overflow"),
    ("sum", pa.int16(), [(INS, 32767), (INS, 1)], "overflow"),
    ("sum", pa.int32(), [(INS, -(2**31)), (UB, 1)], "overflow"),
    ("sum", pa.int64(), [(INS, 2**63 - 1), (INS, 1)], "overflow"),
    ("product", pa.int16(), [(INS, 200), (INS, 200)], "overflow"),
    ("product", pa.int32(), [(INS, 5), (UB, 0)], "divide by zero"),
    ("product", pa.decimal128(10, 2), [(INS, Decimal(1)), (UB, Decimal(2))], "DECIMAL"),
    ("max", pa.int32(), [(INS, 1), (UB, 1)], "ignore-retract"),
    ("min", pa.int32(), [(INS, 1), (DEL, 1)], "ignore-retract"),
    ("first_value", pa.int32(), [(INS, 1), (UB, 1)], "ignore-retract"),
    ("first_non_null_value", pa.int32(), [(INS, 1), (UB, 1)], "ignore-retract"),
    ("bool_and", pa.bool_(), [(INS, True), (UB, True)], "ignore-retract"),
    ("bool_or", pa.bool_(), [(INS, True), (UB, True)], "ignore-retract"),
    ("listagg", pa.string(), [(INS, "a"), (UB, "a")], "ignore-retract"),
]


@pytest.mark.parametrize(("function", "type_", "records", "message"), ERROR_CASES)
def test_aggregate_function_errors(function, type_, records, message) -> None:
    """Integer overflow, division by zero and unsupported retraction fail the merge."""
    with pytest.raises(MergeError, match=message):
        agg_value(function, type_, records)


def test_remove_record_on_delete_resets_the_row_to_the_delete_record() -> None:
    """AggregateMergeFunction: -D re-initializes the row from its own values."""
    options = {"aggregation.remove-record-on-delete": "true"}
    row = aggregate("sum", pa.int32(), [(INS, 1), (DEL, 5), (INS, 2)], **options)
    assert (row[m.KIND], row[m.SEQ], row["v"]) == (INS, 2, 7)
    row = aggregate("sum", pa.int32(), [(INS, 1), (DEL, 5)], **options)
    assert (row[m.KIND], row[m.SEQ], row["v"]) == (DEL, 1, 5)
    # -U is still an ordinary retraction
    assert agg_value("sum", pa.int32(), [(INS, 1), (UB, 5)], **options) == -4


def test_first_value_flags_survive_a_delete_reset() -> None:
    """The aggregators are not reset by -D: first_value stays on the row reset to the -D values,
    while first_non_null_value still takes the first non-null input it has not seen yet."""
    options = {"aggregation.remove-record-on-delete": "true"}
    assert agg_value("first_value", pa.int32(), [(INS, 1), (DEL, 5), (INS, 2)], **options) == 5
    records = [(INS, None), (DEL, 5), (INS, 2)]
    assert agg_value("first_non_null_value", pa.int32(), records, **options) == 2
    assert (
        agg_value("first_non_null_value", pa.int32(), [(INS, 7), (DEL, 5), (INS, 2)], **options)
        == 5
    )


def test_remove_record_on_delete_checks_not_null() -> None:
    """initRow refuses a -D whose NOT NULL field is null."""
    with pytest.raises(MergeError, match="can not be null"):
        aggregate(
            "sum",
            pa.int32(),
            [(INS, 1), (DEL, None)],
            nullable=False,
            **{"aggregation.remove-record-on-delete": "true"},
        )


def test_sequence_field_aggregates_as_last_value() -> None:
    """The sequence field takes last_value (even null) and orders the records."""
    values = pa.schema(
        [pa.field("k", pa.int32(), False), pa.field("ts", pa.int64()), pa.field("v", pa.int64())]
    )
    options = {
        "merge-engine": "aggregation",
        "sequence.field": "ts",
        "fields.v.aggregate-function": "last_value",
    }

    def rec(seq: int, ts: int | None, v: int) -> list[dict]:
        return [{"_KEY_k": 1, m.SEQ: seq, m.KIND: INS, "k": 1, "ts": ts, "v": v}]

    out = m.run_merge([rec(1, 20, 1), rec(2, 10, 2), rec(3, None, 3)], values, ["k"], options)
    assert (out[0]["ts"], out[0]["v"], out[0][m.SEQ]) == (20, 1, 1)
