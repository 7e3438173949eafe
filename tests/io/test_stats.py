"""Data file statistics as Paimon's Java writer (release-2.0.0) records them: modes, truncation,
what each format's stats hold, dense store; and the files our writer produces with them."""

from __future__ import annotations

import datetime as dt
import math

import pyarrow as pa
import pytest
from pypaimon.schema.data_types import ArrayType, AtomicType, MapType, RowType

from dagster_paimon.errors import InvalidArgumentError, InvalidOptionError
from dagster_paimon.io.stats import (
    ABSENT,
    COUNTS,
    FULL,
    MINMAX,
    NONE,
    NULLS,
    SYSTEM_MODE,
    ColumnCollector,
    ColumnStats,
    StatsMode,
    bounds,
    column_modes,
    convert,
    stats_mode,
    table_mode,
    truncate_max,
    truncate_min,
)
from dagster_paimon.kinds import compact_open_table
from dagster_paimon.snapshot.entries import live_entries
from dagster_paimon.table import TableRef, TableSpec, create_table, open_table
from tests.conftest import write_with_pypaimon

T16 = StatsMode("truncate", 16)
FULL_MODE = StatsMode(FULL)


def test_modes_parse_as_java_does():
    assert stats_mode("TRUNCATE(8)") == StatsMode("truncate", 8)
    assert stats_mode("Full") == StatsMode(FULL)
    assert stats_mode("none") == StatsMode(NONE)
    assert stats_mode("counts") == StatsMode(COUNTS)
    for bad in ("truncate(0)", "truncate", "trunc(3)", "all"):
        with pytest.raises(InvalidArgumentError):
            stats_mode(bad)
    with pytest.raises(InvalidOptionError, match=r"metadata\.stats-mode"):
        table_mode({"metadata.stats-mode": "truncate(-1)"}, 0, changelog=False)


def test_table_mode_by_level_and_for_changelogs():
    options = {
        "metadata.stats-mode": "counts",
        "metadata.stats-mode.per.level": "0:none, 5:full",
        "changelog-file.stats-mode": "truncate(4)",
    }
    assert table_mode(options, 0, changelog=False) == StatsMode(NONE)
    assert table_mode(options, 5, changelog=False) == StatsMode(FULL)
    assert table_mode(options, 3, changelog=False) == StatsMode(COUNTS)
    assert table_mode(options, 0, changelog=True) == StatsMode("truncate", 4)
    assert table_mode({}, 0, changelog=True) == T16  # the default, truncate(16)
    with pytest.raises(InvalidOptionError, match=r"per\.level"):
        table_mode({"metadata.stats-mode.per.level": "0:bogus"}, 0, changelog=False)
    with pytest.raises(InvalidOptionError, match=r"per\.level"):
        table_mode({"metadata.stats-mode.per.level": "x:full"}, 0, changelog=False)


def test_system_and_key_columns_are_truncated_at_128_unless_a_field_mode_says():
    names = ["_KEY_id", "_SEQUENCE_NUMBER", "_VALUE_KIND", "id", "v"]
    assert column_modes(names, {}, T16, avro=False) == [SYSTEM_MODE] * 3 + [T16, T16]
    options = {"fields._KEY_id.stats-mode": "none", "fields.v.stats-mode": "full"}
    modes = column_modes(names, options, StatsMode(COUNTS), avro=False)
    assert modes == [StatsMode(NONE), SYSTEM_MODE, SYSTEM_MODE, StatsMode(COUNTS), StatsMode(FULL)]


def test_keep_first_n_columns_counts_value_columns_only_except_in_avro():
    names = ["_KEY_a", "_SEQUENCE_NUMBER", "_VALUE_KIND", "a", "b", "c"]
    options = {"metadata.stats-keep-first-n-columns": "2", "fields.b.stats-mode": "full"}
    parquet = column_modes(names, options, T16, avro=False)
    assert parquet == [SYSTEM_MODE] * 3 + [T16, StatsMode(FULL), StatsMode(NONE)]
    # Avro's factories have no system-column rule: _KEY_a and _SEQUENCE_NUMBER use up the two
    avro = column_modes(names, options, T16, avro=True)
    assert avro == [T16, T16, StatsMode(NONE), StatsMode(NONE), StatsMode(FULL), StatsMode(NONE)]
    # thin mode: the key's value column is truncate(128) and not counted
    thin = column_modes(names[1:], options, T16, avro=False, thin_keys=frozenset({"a"}))
    assert thin == [SYSTEM_MODE, SYSTEM_MODE, SYSTEM_MODE, StatsMode(FULL), T16]


def test_what_each_format_records_per_type():
    nested = [
        ArrayType(True, AtomicType("INT")),
        MapType(True, AtomicType("STRING"), AtomicType("INT")),
        RowType(True, []),
    ]
    for t in nested:
        assert bounds("parquet", t) == ABSENT  # Parquet keys stats by leaf path: none found
        assert bounds("orc", t) == NULLS
        assert bounds("avro", t) == NULLS
    assert [bounds(f, AtomicType("BYTES")) for f in ("parquet", "orc", "avro")] == [
        MINMAX,
        NULLS,
        MINMAX,
    ]
    assert bounds("parquet", AtomicType("TIMESTAMP(9)")) == NULLS  # INT96
    assert bounds("parquet", AtomicType("TIMESTAMP(6)")) == MINMAX
    assert bounds("parquet", AtomicType("TIMESTAMP(3) WITH LOCAL TIME ZONE")) == MINMAX
    assert bounds("orc", AtomicType("TIMESTAMP(9)")) == MINMAX
    assert bounds("parquet", AtomicType("DECIMAL(38, 2)")) == MINMAX


def test_truncation_of_strings_by_code_point():
    assert truncate_min("abcdef", 3) == "abc"
    assert truncate_max("abcdef", 3) == "abd"
    assert truncate_max("abc", 3) == "abc"  # not longer: kept as is
    assert truncate_min("ééé€€", 2) == "éé"  # code points, not bytes
    assert truncate_max("ééé€€", 2) == "éê"
    assert truncate_max("😀😀x", 1) == "😁"  # a 4-byte code point incremented
    assert truncate_max("a\U0010ffff\U0010ffffz", 3) == "b"  # the last ones cannot grow
    assert truncate_max("\U0010ffff" * 3, 2) is None  # no upper bound exists
    # Java writes U+D800 (a lone surrogate) as '?'; we step over the surrogates instead
    assert truncate_max("\ud7ff" * 3, 2) == "\ud7ff\ue000"


def test_truncation_of_binaries():
    assert truncate_min(b"ab\xff\xffz", 4) == b"ab\xff\xff"
    assert truncate_max(b"ab\xff\xffz", 4) == b"ac"
    assert truncate_max(b"ab", 4) == b"ab"
    assert truncate_max(b"\xff\xff\xff", 2) is None
    assert truncate_min(12, 1) == 12 and truncate_max(12.5, 1) == 12.5


def test_convert_keeps_what_the_mode_says():
    stats = ColumnStats("aaaaaa", "\U0010ffff" * 4, 3)
    assert convert(stats, StatsMode(NONE)).is_none()
    assert convert(stats, StatsMode(COUNTS)) == ColumnStats(None, None, 3)
    assert convert(stats, StatsMode(FULL)) == stats
    # a max that cannot be bounded drops the min too (TruncateSimpleColStatsCollector.convert)
    assert convert(stats, StatsMode("truncate", 2)) == ColumnStats(None, None, 3)
    assert convert(ColumnStats("ab", "zzz", 0), StatsMode("truncate", 2)) == ColumnStats(
        "ab", "z{", 0
    )


def collect(arrays: list[pa.Array], mode: StatsMode = FULL_MODE, fmt: str = "parquet"):
    """One column's stats over several batches."""
    collector = ColumnCollector(arrays[0].type, mode, bounds(fmt, _paimon(arrays[0].type)), fmt)
    for array in arrays:
        collector.update(array)
    return collector.result()


def _paimon(arrow_type: pa.DataType) -> AtomicType:
    """A Paimon type for the Arrow types these tests use."""
    if pa.types.is_timestamp(arrow_type):
        return AtomicType("TIMESTAMP(9)" if arrow_type.unit == "ns" else "TIMESTAMP(6)")
    return AtomicType("STRING")


def test_min_max_over_batches_with_nulls_and_null_only_columns():
    batches = [pa.array(["m", None, "b"]), pa.array([None, None], pa.string()), pa.array(["z"])]
    assert collect(batches) == ColumnStats("b", "z", 3)
    only_nulls = [pa.array([None, None], pa.string())]
    assert collect(only_nulls) == ColumnStats(None, None, 2)
    assert collect(only_nulls, StatsMode("truncate", 2)) == ColumnStats(None, None, 2)
    assert collect(only_nulls, StatsMode(NONE)).is_none()
    long = [pa.array(["ä" * 40, "b" * 30])]
    assert collect(long, StatsMode("truncate", 16)) == ColumnStats("b" * 16, "ä" * 15 + "å", 0)


def test_nan_depends_on_the_format():
    values = [pa.array([1.5, math.nan, None]), pa.array([-2.0])]
    assert collect(values, fmt="parquet") == ColumnStats(None, None, 1)
    assert collect(values, fmt="orc") == ColumnStats(None, None, 1)
    avro = collect(values, fmt="avro")  # Double.compareTo: NaN is the largest
    assert avro.min == -2.0 and math.isnan(avro.max)
    only_nan = collect([pa.array([math.nan])], fmt="avro")
    assert math.isnan(only_nan.min) and math.isnan(only_nan.max)
    assert collect([pa.array([0.5, 2.5])], fmt="parquet") == ColumnStats(0.5, 2.5, 0)


def test_nanosecond_timestamps_keep_bounds_at_microseconds():
    nanos = pa.array([1_000_000_500, 2_000_001_001], pa.timestamp("ns"))
    stats = collect([nanos], fmt="orc")
    epoch = dt.datetime(1970, 1, 1)
    assert stats.min == epoch + dt.timedelta(seconds=1)
    assert stats.max == epoch + dt.timedelta(seconds=2, microseconds=2)  # rounded up
    assert collect([nanos], fmt="parquet") == ColumnStats(None, None, 0)  # INT96: none


def test_orc_drops_min_max_of_strings_over_1024_bytes():
    values = [pa.array(["a" * 2000, "zz"])]
    assert collect(values, fmt="orc") == ColumnStats(None, "zz", 0)
    assert collect(values, StatsMode("truncate", 4), fmt="orc") == ColumnStats(None, "zz", 0)
    assert collect(values, fmt="parquet") == ColumnStats("a" * 2000, "zz", 0)


SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("v", pa.string()),
        pa.field("n", pa.int64()),
        pa.field("tags", pa.list_(pa.string())),
    ]
)


def rows(first: int, count: int, tag: str) -> pa.Table:
    """Rows id first.., with a long string value and a list column."""
    ids = list(range(first, first + count))
    return pa.table(
        {
            "id": ids,
            "v": [f"{tag}-{'x' * 20}-{i:04d}" if i % 5 else None for i in ids],
            "n": [i * 3 for i in ids],
            "tags": [[tag, str(i)] for i in ids],
        },
        schema=SCHEMA,
    )


def compacted(warehouse: str, **options: str):
    """A table written by pypaimon in three overlapping commits, then fully compacted by us."""
    spec = TableSpec("db", "t", SCHEMA, ("id",), 1, (), options)
    table = create_table(warehouse, spec)
    for commit in range(3):
        write_with_pypaimon(table, rows(commit * 10, 30, f"c{commit}"))
    compact_open_table(table, TableRef.of(warehouse, "db.t"), full=True)
    table = open_table(warehouse, "db.t")
    snapshot = table.snapshot_manager().get_latest_snapshot()
    (entry,) = live_entries(table, snapshot, with_stats=True)
    return entry.file


def decoded(row) -> list:
    """Every field of a stats row as read back from the manifest."""
    return [row.get_field(i) for i in range(row.arity)]


def test_the_writer_records_java_stats_with_dense_store_only_when_set(warehouse):
    file = compacted(warehouse)  # default truncate(16); list columns have none (Parquet)
    assert file.value_stats_cols is None  # dense store not set: every column, nested as none
    assert decoded(file.value_stats.min_values) == [0, "c0-xxxxxxxxxxxxx", 0, None]
    assert decoded(file.value_stats.max_values) == [49, "c2-xxxxxxxxxxxxy", 147, None]
    assert file.value_stats.null_counts == [0, 10, 0, None]
    assert decoded(file.key_stats.min_values) == [0]
    assert file.key_stats.null_counts == [0]


def test_dense_store_set_leaves_columns_without_stats_out(tmp_path):
    dense = compacted(
        str(tmp_path / "a"),
        **{"metadata.stats-dense-store": "true", "fields.n.stats-mode": "none"},
    )
    assert dense.value_stats_cols == ["id", "v"]
    assert decoded(dense.value_stats.min_values) == [0, "c0-xxxxxxxxxxxxx"]
    assert dense.value_stats.null_counts == [0, 10]
    nothing = compacted(
        str(tmp_path / "b"), **{"metadata.stats-dense-store": "true", "metadata.stats-mode": "none"}
    )
    assert nothing.value_stats_cols == [] and nothing.value_stats.null_counts == []
    assert decoded(nothing.key_stats.max_values) == [49]  # keys: truncate(128) still
    sparse = compacted(str(tmp_path / "c"), **{"metadata.stats-mode": "none"})
    assert sparse.value_stats_cols is None
    assert sparse.value_stats.null_counts == [None] * 4


def test_per_level_and_thin_mode(tmp_path):
    options = {
        "metadata.stats-mode.per.level": "0:none,5:counts",
        "data-file.thin-mode": "true",
        "fields.n.stats-mode": "full",
    }
    file = compacted(str(tmp_path / "a"), **options)
    assert file.level == 5
    # thin mode: id is truncate(128) (key stats come from it), n its own mode, the rest counts
    assert decoded(file.value_stats.min_values) == [0, None, 0, None]
    assert decoded(file.value_stats.max_values) == [49, None, 147, None]
    assert file.value_stats.null_counts == [0, 10, 0, None]
    assert decoded(file.key_stats.min_values) == [0] and file.key_stats.null_counts == [0]


def model() -> dict[int, dict]:
    """The rows `compacted` leaves: the last commit writing an id wins."""
    latest: dict[int, dict] = {}
    for commit in range(3):
        for row in rows(commit * 10, 30, f"c{commit}").to_pylist():
            latest[row["id"]] = row
    return latest


MODES = {
    "default": {},
    "none": {"metadata.stats-mode": "none"},
    "counts": {"metadata.stats-mode": "counts"},
    "full": {"metadata.stats-mode": "full"},
    "truncate-4": {"metadata.stats-mode": "truncate(4)"},
    "per-column": {"metadata.stats-mode": "none", "fields.v.stats-mode": "truncate(2)"},
    "dense": {"metadata.stats-dense-store": "true", "fields.n.stats-mode": "none"},
    "per-level": {"metadata.stats-mode.per.level": "5:full", "metadata.stats-mode": "none"},
    "keep-first-1": {"metadata.stats-keep-first-n-columns": "1"},
}


@pytest.mark.parametrize("options", MODES.values(), ids=MODES.keys())
def test_pypaimon_filters_our_files_by_their_stats_exactly(warehouse, options):
    # deletion vectors: pypaimon then prunes primary-key files by their value stats
    compacted(warehouse, **{"deletion-vectors.enabled": "true", **options})
    table = open_table(warehouse, "db.t")
    builder = table.new_read_builder().new_predicate_builder()
    expected = model()
    cases = [
        (builder.equal("n", 30), lambda r: r["n"] == 30),
        (builder.greater_than("v", "c2-xxxx"), lambda r: r["v"] is not None and r["v"] > "c2-xxxx"),
        (builder.less_than("v", "c1"), lambda r: r["v"] is not None and r["v"] < "c1"),
        (builder.is_null("v"), lambda r: r["v"] is None),
        (builder.between("id", 12, 14), lambda r: 12 <= r["id"] <= 14),
        (builder.equal("n", 10**6), lambda r: False),
        (builder.greater_than("v", "c2-y"), lambda r: r["v"] is not None and r["v"] > "c2-y"),
    ]
    for predicate, matches in cases:
        read = table.new_read_builder().with_filter(predicate)
        splits = read.new_scan().plan().splits()
        got = read.new_read().to_arrow(splits).to_pylist() if splits else []
        assert sorted(r["id"] for r in got) == sorted(i for i, r in expected.items() if matches(r))
    pruned = table.new_read_builder().with_filter(builder.equal("n", 10**6))
    n_has_bounds = options in [MODES[m] for m in ("default", "full", "truncate-4", "per-level")]
    assert (not pruned.new_scan().plan().splits()) == n_has_bounds
