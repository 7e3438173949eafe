"""merge_sorted_runs against a row-at-a-time model of every merge engine, plus the merge loop."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, currently_in_test_context, event, given, settings
from hypothesis import strategies as st

from dagster_paimon.errors import MergeError
from dagster_paimon.lsm.merge.kway import MergeEngine, MergeStats, merge_sorted_runs
from tests.lsm import merge_model as m

PROPERTY = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

KEYS = st.tuples(st.integers(0, 4), st.sampled_from(["a", "b", "ü"]))


@st.composite
def kv_runs(
    draw: st.DrawFn, values: dict[str, st.SearchStrategy], kinds: st.SearchStrategy[int]
) -> tuple[list[list[dict]], list[int]]:
    """1-4 runs, each sorted by key then sequence number, over a small composite key space
    (so keys collide across and within runs), with a batch size per run."""
    key_space = draw(st.lists(KEYS, min_size=1, max_size=6, unique=True))
    runs = []
    for _ in range(draw(st.integers(1, 4))):
        run = []
        for _ in range(draw(st.integers(0, 10))):
            k1, k2 = draw(st.sampled_from(key_space))
            record = {
                "_KEY_k1": k1,
                "_KEY_k2": k2,
                m.SEQ: draw(st.integers(0, 25)),
                m.KIND: draw(kinds),
                "k1": k1,
                "k2": k2,
            }
            record.update({name: draw(strategy) for name, strategy in values.items()})
            run.append(record)
        run.sort(key=lambda r: (r["k1"], r["k2"], r[m.SEQ]))
        runs.append(run)
    batch_rows = [draw(st.integers(1, 4)) for _ in runs]
    return runs, batch_rows


def _schema(*fields: pa.Field) -> pa.Schema:
    """Key columns k1, k2 (NOT NULL) then the given value fields."""
    return pa.schema(
        [pa.field("k1", pa.int32(), nullable=False), pa.field("k2", pa.string(), False), *fields]
    )


def _check(
    runs: list[list[dict]],
    batch_rows: list[int],
    values: pa.Schema,
    options: dict[str, str],
    model: Callable[[m.Table], object],
    drop_delete: bool,
    max_batch_rows: int = 3,
) -> None:
    """The engine's output (or error) equals the model's."""
    table = m.model_table(values, ["k1", "k2"], options)
    expected = m.merge_or_error(lambda: m.model_merge(runs, table, model(table), drop_delete))
    actual = m.merge_or_error(
        lambda: m.run_merge(
            runs,
            values,
            ["k1", "k2"],
            options,
            drop_delete=drop_delete,
            batch_rows=batch_rows,
            max_batch_rows=max_batch_rows,
        )
    )
    if currently_in_test_context():
        keys = [(r["k1"], r["k2"]) for run in runs for r in run]
        event("has merged keys" if len(set(keys)) < len(keys) else "no merged keys")
        event("error" if expected == m.ERROR else "rows" if expected else "empty")
    assert actual == expected


ANY_KIND = st.sampled_from([0, 1, 2, 3])
ADD_KIND = st.sampled_from([0, 2])
SMALL_INT = st.none() | st.integers(-5, 5)
WORD = st.none() | st.sampled_from(["", " ", "x", "y", "x,y", "y,,z", "z,"])

IGNORE_DELETE_KEYS = [
    "ignore-delete",
    "deduplicate.ignore-delete",
    "first-row.ignore-delete",
    "partial-update.ignore-delete",
]


@PROPERTY
@given(
    data=kv_runs({"ts": SMALL_INT, "v": SMALL_INT, "s": WORD}, ANY_KIND),
    ignore_key=st.sampled_from(IGNORE_DELETE_KEYS),
    ignore_delete=st.booleans(),
    sequence_field=st.sampled_from([None, "ts", "ts,v"]),
    descending=st.booleans(),
    drop_delete=st.booleans(),
)
def test_deduplicate_matches_model(
    data, ignore_key, ignore_delete, sequence_field, descending, drop_delete
) -> None:
    """Latest record wins in (sequence.field, sequence number, retract-first) order."""
    options = {"merge-engine": "deduplicate", ignore_key: str(ignore_delete).lower()}
    if sequence_field:
        options["sequence.field"] = sequence_field
        options["sequence.field.sort-order"] = "descending" if descending else "ascending"
    values = _schema(
        pa.field("ts", pa.int64()), pa.field("v", pa.int32()), pa.field("s", pa.string())
    )
    _check(*data, values, options, lambda t: m.Deduplicate(ignore_delete), drop_delete)


@PROPERTY
@given(
    data=kv_runs({"v": SMALL_INT}, st.sampled_from([0, 0, 0, 2, 1, 3])),
    ignore_delete=st.booleans(),
    drop_delete=st.booleans(),
)
def test_first_row_matches_model(data, ignore_delete, drop_delete) -> None:
    """First add wins; a retraction in a merged key is an error unless ignore-delete."""
    options = {"merge-engine": "first-row", "first-row.ignore-delete": str(ignore_delete).lower()}
    values = _schema(pa.field("v", pa.int32()))
    _check(*data, values, options, lambda t: m.FirstRow(ignore_delete), drop_delete)


@PROPERTY
@given(
    data=st.data(),
    mode=st.sampled_from(["default", "ignore-delete", "remove-record-on-delete"]),
    null_in_not_null_field=st.integers(0, 4).map(lambda n: n == 0),
    drop_delete=st.booleans(),
)
def test_partial_update_matches_model(data, mode, null_in_not_null_field, drop_delete) -> None:
    """Non-null fields overwrite; NOT NULL is enforced; deletes per mode."""
    options = {"merge-engine": "partial-update"}
    if mode == "ignore-delete":
        options["partial-update.ignore-delete"] = "true"
    elif mode == "remove-record-on-delete":
        options["partial-update.remove-record-on-delete"] = "true"
    b = st.sampled_from(["p", "q", "r"])
    kinds = ADD_KIND if mode == "default" and data.draw(st.booleans()) else ANY_KIND
    runs = data.draw(
        kv_runs(
            {
                "a": SMALL_INT,
                "b": st.none() | b if null_in_not_null_field else b,
                "c": st.none() | st.integers(-(2**63), 2**63 - 1),
            },
            kinds,
        )
    )
    values = _schema(
        pa.field("a", pa.int32()), pa.field("b", pa.string(), False), pa.field("c", pa.int64())
    )

    def model(table: m.Table) -> m.PartialUpdate:
        return m.PartialUpdate(
            table, mode == "ignore-delete", mode == "remove-record-on-delete", [], {}, set()
        )

    _check(*runs, values, options, model, drop_delete)


GROUP_FUNCTIONS = {
    "sum": m.Sum,
    "first_value": m.FirstValue,
    "last_non_null_value": m.LastNonNull,
    "last_value": m.LastValue,
    "max": m.Max,
}


@PROPERTY
@given(
    data=kv_runs(
        {
            "g1": SMALL_INT,
            "a": SMALL_INT,
            "b": SMALL_INT,
            "g2a": st.none() | st.integers(0, 2),
            "g2b": st.none() | st.integers(0, 2),
            "c": SMALL_INT,
            "d": SMALL_INT,
            "e": st.none() | st.lists(st.integers(0, 2), max_size=2),
        },
        st.sampled_from([0, 0, 2, 1, 3]),
    ),
    b_function=st.sampled_from(sorted(GROUP_FUNCTIONS)),
    c_function=st.sampled_from([None, *sorted(GROUP_FUNCTIONS)]),
    ignore_retract=st.booleans(),
    deletes=st.sampled_from(["retract", "ignore-delete", "remove-on-g1", "remove-on-g2b"]),
    drop_delete=st.booleans(),
)
def test_partial_update_sequence_groups_match_model(
    data, b_function, c_function, ignore_retract, deletes, drop_delete
) -> None:
    """Sequence groups (one and two ordering fields, aggregators inside, collect's reversed agg,
    partial deletes) fold exactly as Java's field-by-field loop."""
    options = {
        "merge-engine": "partial-update",
        "fields.g1.sequence-group": "a,b,e",
        "fields.g2a,g2b.sequence-group": "c",
        "fields.b.aggregate-function": b_function,
        "fields.e.aggregate-function": "collect",
        "fields.b.ignore-retract": str(ignore_retract).lower(),
    }
    if c_function:
        options["fields.c.aggregate-function"] = c_function
    partial_delete: set[str] = set()
    if deletes == "ignore-delete":
        options["ignore-delete"] = "true"
    elif deletes != "retract":
        partial_delete = {"g1"} if deletes == "remove-on-g1" else {"g2b"}
        options["partial-update.remove-record-on-sequence-group"] = ",".join(partial_delete)
    values = _schema(
        *(pa.field(n, pa.int32()) for n in ("g1", "a", "b", "g2a", "g2b", "c", "d")),
        pa.field("e", pa.list_(pa.int32())),
    )

    def model(table: m.Table) -> m.PartialUpdate:
        b_agg = GROUP_FUNCTIONS[b_function]("int32")
        aggs: dict[str, m.Agg] = {
            "k1": m.PrimaryKey("int32"),
            "k2": m.PrimaryKey("string"),
            "b": m.IgnoreRetract(b_agg) if ignore_retract else b_agg,
            "e": m.Collect("list"),
        }
        if c_function:
            aggs["c"] = GROUP_FUNCTIONS[c_function]("int32")
        groups = [(["g1"], ["a", "b", "e"]), (["g2a", "g2b"], ["c"])]
        return m.PartialUpdate(
            table, deletes == "ignore-delete", False, groups, aggs, partial_delete
        )

    _check(*data, values, options, model, drop_delete)


SCALAR_FUNCTIONS: dict[str, tuple[pa.DataType, st.SearchStrategy, type[m.Agg]]] = {
    "sum8": (pa.int8(), st.none() | st.integers(-40, 40), m.Sum),
    "sum64": (pa.int64(), st.none() | st.integers(-(2**62), 2**62), m.Sum),
    "fsum": (pa.float64(), st.none() | st.floats(-1e6, 1e6, allow_nan=False), m.Sum),
    "prod": (pa.int16(), st.none() | st.integers(-7, 7), m.Product),
    "max": (pa.string(), st.none() | st.sampled_from(["a", "b", "ab", ""]), m.Max),
    "min": (pa.int32(), SMALL_INT, m.Min),
    "last": (pa.int32(), SMALL_INT, m.LastValue),
    "lnn": (pa.string(), st.none() | st.sampled_from(["a", "b"]), m.LastNonNull),
    "first": (pa.int32(), SMALL_INT, m.FirstValue),
    "fnn": (pa.int32(), SMALL_INT, m.FirstNonNull),
    "band": (pa.bool_(), st.none() | st.booleans(), m.BoolAnd),
    "bor": (pa.bool_(), st.none() | st.booleans(), m.BoolOr),
}
NOT_RETRACTABLE = ("max", "first", "fnn", "band", "bor")
FUNCTION_NAMES = {
    "sum8": "sum",
    "sum64": "sum",
    "fsum": "sum",
    "prod": "product",
    "max": "max",
    "min": "min",
    "last": "last_value",
    "lnn": None,
    "first": "first_value",
    "fnn": "first_not_null_value",
    "band": "bool_and",
    "bor": "bool_or",
}


def _aggregation_model(
    specs: dict[str, type[m.Agg]], ignore: set[str], kinds: dict[str, str], remove: bool
) -> Callable[[m.Table], m.Aggregate]:
    """The model aggregate function for the given per-field classes."""

    def build(table: m.Table) -> m.Aggregate:
        aggs: dict[str, m.Agg] = {"k1": m.PrimaryKey("int32"), "k2": m.PrimaryKey("string")}
        for name, cls in specs.items():
            agg = m.LastValue(kinds[name]) if name in table.sequence_fields else cls(kinds[name])
            aggs[name] = m.IgnoreRetract(agg) if name in ignore else agg
        return m.Aggregate(table, aggs, remove)

    return build


@PROPERTY
@given(
    data=st.data(),
    retracts=st.booleans(),
    remove_record_on_delete=st.booleans(),
    sequence_field=st.sampled_from([None, "min", "last"]),
    drop_delete=st.booleans(),
)
def test_aggregation_scalar_functions_match_model(
    data, retracts, remove_record_on_delete, sequence_field, drop_delete
) -> None:
    """sum (overflow), product (retract divides), max/min, last/first values, bools."""
    runs = data.draw(
        kv_runs(
            {n: spec[1] for n, spec in SCALAR_FUNCTIONS.items()}, ANY_KIND if retracts else ADD_KIND
        )
    )
    ignore: set[str] = set()
    if not remove_record_on_delete:
        everything_but_one = st.sampled_from(NOT_RETRACTABLE).map(
            lambda n: set(NOT_RETRACTABLE) - {n}
        )
        ignore = data.draw(
            st.just(set(NOT_RETRACTABLE))
            | everything_but_one
            | st.sets(st.sampled_from(sorted(SCALAR_FUNCTIONS)))
        )
    options = {"merge-engine": "aggregation"}
    for name, function in FUNCTION_NAMES.items():
        if function and name != sequence_field:
            options[f"fields.{name}.aggregate-function"] = function
        if name in ignore:
            options[f"fields.{name}.ignore-retract"] = "true"
    if remove_record_on_delete:
        options["aggregation.remove-record-on-delete"] = "true"
    if sequence_field:
        options["sequence.field"] = sequence_field
    values = _schema(*(pa.field(n, spec[0]) for n, spec in SCALAR_FUNCTIONS.items()))
    kinds = {n: str(spec[0]).replace("string", "str") for n, spec in SCALAR_FUNCTIONS.items()}
    specs = {n: spec[2] for n, spec in SCALAR_FUNCTIONS.items()}
    model = _aggregation_model(specs, ignore, kinds, remove_record_on_delete)
    _check(*runs, values, options, model, drop_delete)


@PROPERTY
@given(
    data=kv_runs(
        {
            "tags": WORD,
            "bag": st.none() | st.lists(st.none() | st.integers(0, 3), max_size=3),
            "attrs": st.none()
            | st.dictionaries(
                st.sampled_from("xyz"), st.none() | st.integers(0, 3), max_size=3
            ).map(lambda d: list(d.items())),
        },
        st.sampled_from([0, 0, 2, 1, 3]),
    ),
    delimiter=st.sampled_from([",", ";", "--", ""]),
    listagg_distinct=st.booleans(),
    collect_distinct=st.booleans(),
    ignore_listagg_retract=st.booleans(),
    drop_delete=st.booleans(),
)
def test_aggregation_list_functions_match_model(
    data, delimiter, listagg_distinct, collect_distinct, ignore_listagg_retract, drop_delete
) -> None:
    """listagg (delimiter, distinct, blanks), collect (distinct, retract), merge_map."""
    options = {
        "merge-engine": "aggregation",
        "fields.tags.aggregate-function": "listagg",
        "fields.tags.list-agg-delimiter": delimiter,
        "fields.tags.distinct": str(listagg_distinct).lower(),
        "fields.tags.ignore-retract": str(ignore_listagg_retract).lower(),
        "fields.bag.aggregate-function": "collect",
        "fields.bag.distinct": str(collect_distinct).lower(),
        "fields.attrs.aggregate-function": "merge_map",
    }
    values = _schema(
        pa.field("tags", pa.string()),
        pa.field("bag", pa.list_(pa.int32())),
        pa.field("attrs", pa.map_(pa.string(), pa.int32())),
    )

    def model(table: m.Table) -> m.Aggregate:
        listagg = m.ListAgg("string", delimiter, listagg_distinct)
        aggs = {
            "k1": m.PrimaryKey("int32"),
            "k2": m.PrimaryKey("string"),
            "tags": m.IgnoreRetract(listagg) if ignore_listagg_retract else listagg,
            "bag": m.Collect("list", collect_distinct),
            "attrs": m.MergeMap("map"),
        }
        return m.Aggregate(table, aggs, False)

    _check(*data, values, options, model, drop_delete)


LARGE_ENGINES = {
    "deduplicate": (
        {"sequence.field": "ts", "sequence.field.sort-order": "descending"},
        lambda t: m.Deduplicate(False),
    ),
    "partial-update": (
        {"merge-engine": "partial-update", "partial-update.remove-record-on-delete": "true"},
        lambda t: m.PartialUpdate(t, False, True, [], {}, set()),
    ),
    "aggregation": (
        {
            "merge-engine": "aggregation",
            "fields.v.aggregate-function": "sum",
            "fields.s.aggregate-function": "listagg",
            "fields.s.ignore-retract": "true",
            "fields.l.aggregate-function": "collect",
        },
        lambda t: m.Aggregate(
            t,
            {
                "k1": m.PrimaryKey("int32"),
                "k2": m.PrimaryKey("string"),
                "ts": m.LastNonNull("int64"),
                "v": m.Sum("int64"),
                "s": m.IgnoreRetract(m.ListAgg("string")),
                "l": m.Collect("list"),
            },
            False,
        ),
    ),
}


@pytest.mark.parametrize("engine", sorted(LARGE_ENGINES))
def test_larger_random_runs_match_model(engine: str) -> None:
    """Thousands of records over hundreds of keys, many slices and deep keys."""
    rng = np.random.default_rng(len(engine))
    runs = []
    for run_index in range(5):
        size = int(rng.integers(200, 2000))
        keys = np.sort(rng.integers(0, 300, size))
        run = [
            {
                "_KEY_k1": int(k) // 3,
                "_KEY_k2": "abc"[int(k) % 3],
                m.SEQ: run_index * 10_000 + i,
                m.KIND: int(rng.choice([0, 0, 0, 2, 1, 3])),
                "k1": int(k) // 3,
                "k2": "abc"[int(k) % 3],
                "ts": None if rng.random() < 0.2 else int(rng.integers(0, 50)),
                "v": None if rng.random() < 0.2 else int(rng.integers(-100, 100)),
                "s": None if rng.random() < 0.3 else str(rng.choice(["x", "y", " "])),
                "l": None if rng.random() < 0.3 else [int(x) for x in rng.integers(0, 3, 2)],
            }
            for i, k in enumerate(keys)
        ]
        runs.append(run)
    values = _schema(
        pa.field("ts", pa.int64()),
        pa.field("v", pa.int64()),
        pa.field("s", pa.string()),
        pa.field("l", pa.list_(pa.int32())),
    )
    options, model = LARGE_ENGINES[engine]
    batch_rows = [int(rng.integers(1, 300)) for _ in runs]
    for drop_delete in (False, True):
        _check(runs, batch_rows, values, options, model, drop_delete, max_batch_rows=1000)


VALUES = _schema(pa.field("v", pa.int64()))


def _record(key: int, seq: int, kind: int = 0, v: int | None = None) -> dict:
    """A KV record of the (k1, k2, v) table with k2 fixed."""
    return {"_KEY_k1": key, "_KEY_k2": "a", m.SEQ: seq, m.KIND: kind, "k1": key, "k2": "a", "v": v}


def test_single_record_passes_through_unchanged() -> None:
    """A lone -D stays a -D (the merge function is not called) unless deletes are dropped."""
    runs = [[_record(1, 5, 3, 7)], [_record(2, 6, 0, 1), _record(2, 7, 0, 2)]]
    for engine in ("deduplicate", "first-row", "partial-update", "aggregation"):
        options = {"merge-engine": engine}
        out = m.run_merge(runs, VALUES, ["k1", "k2"], options)
        assert out[0] == _record(1, 5, 3, 7)
        assert [
            r["k1"] for r in m.run_merge(runs, VALUES, ["k1", "k2"], options, drop_delete=True)
        ] == [2]


def test_output_is_sorted_by_composite_key_with_one_record_per_key() -> None:
    """Keys come out in Arrow's order, column by column, whatever the run interleaving."""
    runs = [
        [_record(k, k) for k in range(0, 40, 2)],
        [_record(k, 100 + k) for k in range(0, 40, 3)],
        [_record(k, 200 + k) for k in range(39, -1, -1)][::-1],
    ]
    out = m.run_merge(runs, VALUES, ["k1", "k2"], {}, batch_rows=[3, 5, 7], max_batch_rows=4)
    assert [r["k1"] for r in out] == list(range(40))
    assert all(r[m.SEQ] == 200 + r["k1"] for r in out)


def test_partition_keys_are_not_key_columns() -> None:
    """A partition column is part of the primary key but not of the _KEY_ columns."""
    values = pa.schema(
        [
            pa.field("p", pa.string(), False),
            pa.field("id", pa.int64(), False),
            pa.field("v", pa.int64()),
        ]
    )
    engine = MergeEngine.from_options(values, ["p", "id"], ["p"], {"merge-engine": "aggregation"})
    assert engine.key_columns == ("_KEY_id",)
    rows = [
        [{"_KEY_id": 1, m.SEQ: 1, m.KIND: 0, "p": "x", "id": 1, "v": 1}],
        [{"_KEY_id": 1, m.SEQ: 2, m.KIND: 0, "p": "x", "id": 1, "v": None}],
    ]
    out = m.run_merge(
        rows, values, ["p", "id"], {"merge-engine": "aggregation"}, partition_keys=("p",)
    )
    assert out == [{"_KEY_id": 1, m.SEQ: 2, m.KIND: 0, "p": "x", "id": 1, "v": 1}]


@pytest.mark.parametrize(
    ("order", "expected"),
    [("ascending", 30), ("descending", 10)],
)
def test_sequence_field_orders_records_null_smallest(order: str, expected: int) -> None:
    """sequence.field decides the latest record; null sorts first in both directions."""
    values = _schema(pa.field("ts", pa.int64()), pa.field("v", pa.int64()))
    options = {"sequence.field": "ts", "sequence.field.sort-order": order}

    def rec(seq: int, ts: int | None, v: int) -> dict:
        return {
            "_KEY_k1": 1,
            "_KEY_k2": "a",
            m.SEQ: seq,
            m.KIND: 0,
            "k1": 1,
            "k2": "a",
            "ts": ts,
            "v": v,
        }

    runs = [[rec(9, 30, 30)], [rec(8, None, 99)], [rec(7, 10, 10)]]
    assert m.run_merge(runs, values, ["k1", "k2"], options)[0]["v"] == expected
    runs = [[rec(1, None, 1)], [rec(2, None, 2)]]
    assert m.run_merge(runs, values, ["k1", "k2"], options)[0]["v"] == 2


def test_equal_sequence_numbers_put_retract_before_add() -> None:
    """With equal sequence numbers the add wins under deduplicate (retract sorts first)."""
    runs = [[_record(1, 5, 0, 1)], [_record(1, 5, 3, 2)]]
    assert m.run_merge(runs, VALUES, ["k1", "k2"], {})[0][m.KIND] == 0
    assert m.run_merge(runs[::-1], VALUES, ["k1", "k2"], {})[0][m.KIND] == 0


def test_deduplicate_ignore_delete_drops_a_key_with_only_retractions() -> None:
    """Java's null result is skipped, not written."""
    runs = [[_record(1, 1, 3, 1)], [_record(1, 2, 1, 1)], [_record(2, 3, 0, 5)]]
    out = m.run_merge(runs, VALUES, ["k1", "k2"], {"ignore-delete": "true"})
    assert [r["k1"] for r in out] == [2]


def test_first_row_retraction_is_an_error_without_ignore_delete() -> None:
    """FirstRowMergeFunction throws on -U/-D."""
    runs = [[_record(1, 1, 0, 1)], [_record(1, 2, 3, 1)]]
    with pytest.raises(MergeError, match="ignore-delete"):
        m.run_merge(runs, VALUES, ["k1", "k2"], {"merge-engine": "first-row"})
    out = m.run_merge(
        runs, VALUES, ["k1", "k2"], {"merge-engine": "first-row", "ignore-delete": "true"}
    )
    assert out == [_record(1, 1, 0, 1)]


def test_empty_inputs_give_no_output() -> None:
    """No runs, empty runs and empty batches are all fine."""
    engine = MergeEngine.from_options(VALUES, ["k1", "k2"], [], {})
    schema = m.kv_schema_of(VALUES, ["k1", "k2"])
    empty = schema.empty_table().to_batches()
    keys = list(engine.key_columns)
    assert list(merge_sorted_runs([], engine, drop_delete=False, key_columns=keys)) == []
    assert list(merge_sorted_runs([[], empty], engine, drop_delete=True, key_columns=keys)) == []


def test_a_key_spanning_many_batches_of_one_run_is_merged_once() -> None:
    """Repeats of a key straddling batch boundaries still meet in one merge."""
    run = [_record(1, s, 0, 1) for s in range(50)] + [_record(2, 50, 0, 1)]
    out = m.run_merge(
        [run, [_record(1, 99, 0, 1)]],
        VALUES,
        ["k1", "k2"],
        {"merge-engine": "aggregation", "fields.v.aggregate-function": "sum"},
        batch_rows=[4, 1],
    )
    assert [(r["k1"], r["v"], r[m.SEQ]) for r in out] == [(1, 51, 99), (2, 1, 50)]


class _CountingRun:
    """A run generated lazily, counting the rows handed out."""

    def __init__(self, keys: np.ndarray, offset: int, batch_rows: int, pulled: list[int]) -> None:
        self.keys, self._offset, self._batch_rows, self._pulled = keys, offset, batch_rows, pulled

    def __iter__(self) -> Iterator[pa.RecordBatch]:
        for start in range(0, len(self.keys), self._batch_rows):
            keys = self.keys[start : start + self._batch_rows]
            self._pulled[0] += len(keys)
            yield pa.RecordBatch.from_pydict(
                {
                    "_KEY_k": keys,
                    m.SEQ: np.arange(len(keys), dtype=np.int64) + self._offset,
                    m.KIND: np.zeros(len(keys), dtype=np.int8),
                    "k": keys,
                    "v": np.ones(len(keys), dtype=np.int64),
                }
            )


@pytest.mark.slow
def test_memory_is_bounded_by_batches_not_run_length() -> None:
    """2M rows in 4 runs of 1000-row batches: buffers never hold more than a few batches per
    run, and the runs are consumed in step with the output (nothing read far ahead)."""
    values = pa.schema([pa.field("k", pa.int64(), False), pa.field("v", pa.int64())])
    options = {"merge-engine": "aggregation", "fields.v.aggregate-function": "sum"}
    engine = MergeEngine.from_options(values, ["k"], [], options)
    runs_count, rows_per_run, batch_rows = 4, 500_000, 1000
    rng = np.random.default_rng(7)
    pulled = [0]
    runs = [
        _CountingRun(
            np.sort(rng.choice(1_500_000, rows_per_run, replace=False)).astype(np.int64),
            i * rows_per_run,
            batch_rows,
            pulled,
        )
        for i in range(runs_count)
    ]
    stats = MergeStats()
    last_key = -1
    total = 0
    for batch in merge_sorted_runs(
        runs, engine, drop_delete=True, key_columns=["_KEY_k"], max_batch_rows=4096, stats=stats
    ):
        keys = batch.column("_KEY_k").to_numpy()
        assert keys[0] > last_key and (np.diff(keys) > 0).all()
        last_key = int(keys[-1])
        total += int(np.asarray(batch.column("v")).sum())
        consumed = sum(int(np.searchsorted(r.keys, last_key, side="right")) for r in runs)
        # Rows read but not yet emitted: a couple of batches per run plus one output batch.
        assert pulled[0] - consumed <= runs_count * (2 * batch_rows + 4096)
    assert stats.rows_read == runs_count * rows_per_run
    assert total == runs_count * rows_per_run
    assert stats.peak_buffered_rows <= runs_count * 2 * batch_rows
