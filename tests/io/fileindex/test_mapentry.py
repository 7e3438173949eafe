"""Indexes of one key of a map column (`file-index.<type>.columns = m[k]`): the records Java's
DataFileIndexWriter.MapFileIndexMaintainer feeds each key's writer, the options a key takes
(FileIndexOptions: the map column's, then its own), and compaction outputs indexing them."""

from __future__ import annotations

import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pypaimon.schema.data_types import AtomicType, DataField, MapType

from dagster_paimon.errors import InvalidOptionError, UnsupportedLayoutError
from dagster_paimon.io.fileindex import FileIndexBuilder, file_index_plan
from dagster_paimon.io.fileindex.mapentry import entry_values
from dagster_paimon.kinds import compact_open_table
from dagster_paimon.table import TableRef, TableSpec, create_table
from tests.conftest import write_with_pypaimon
from tests.io.fileindex.reader import RangeBitmap, bitmap_rows, sections
from tests.io.fileindex.test_write import blob_of, compacted_files
from tests.lsm.kvmodel import read_rows, sorted_rows

MAP = pa.map_(pa.string(), pa.int32())


def records(maps: list, key: str) -> list:
    """MapFileIndexMaintainer.write, row by row: each entry of `key`, else one null."""
    out = []
    for m in maps:
        found = [v for k, v in (m or []) if k == key]
        out += found if m is not None and found else [None]
    return out


MAPS = [
    [("a", 1), ("b", 2)],
    None,
    [],
    [("b", 3)],
    [("a", None), ("c", 4)],
    [("a", 5), ("a", 6)],  # a key twice: Java writes both values
    [("c", 7), ("a", 8)],
]


@pytest.mark.parametrize("key", ["a", "b", "c", "zz"])
def test_each_row_gives_its_entries_of_the_key_or_a_null(key):
    column = pa.array(MAPS, MAP)
    assert entry_values(column, key).to_pylist() == records(MAPS, key)
    assert entry_values(column.slice(2, 4), key).to_pylist() == records(MAPS[2:6], key)


FIELDS = [
    DataField(0, "id", AtomicType("INT")),
    DataField(1, "m", MapType(True, AtomicType("STRING"), AtomicType("INT"))),
]


def test_a_key_takes_its_map_column_options_then_its_own():
    plan = file_index_plan(
        {
            "file-index.bitmap.columns": "m[a],m[b],id",
            "file-index.bitmap.m.version": "1",
            "file-index.bitmap.m[b].version": "2",
            "file-index.bitmap.id.version": "1",
        },
        FIELDS,
    )
    found = {s.name: (s.column, s.map_key, s.options, s.jtype.root) for s in plan.specs}
    assert found == {
        "m[a]": ("m", "a", {"version": "1"}, "INT"),
        "m[b]": ("m", "b", {"version": "2"}, "INT"),
        "id": ("id", None, {"version": "1"}, "INT"),
    }
    with pytest.raises(InvalidOptionError, match="m\\[c\\]"):
        file_index_plan(
            {"file-index.bitmap.columns": "m[a]", "file-index.bitmap.m[c].version": "1"}, FIELDS
        )


@pytest.mark.parametrize(
    ("column", "named"),
    [("id[a]", "not a MAP"), ("n[a]", "lacks"), ("x[a]", "string keys")],
)
def test_keys_java_cannot_index_are_refused(column, named):
    fields = [
        *FIELDS,
        DataField(2, "x", MapType(True, AtomicType("INT"), AtomicType("INT"))),
    ]
    with pytest.raises(UnsupportedLayoutError, match=named):
        file_index_plan({"file-index.bloom-filter.columns": column}, fields)


def test_each_key_indexes_its_records_in_the_blob():
    plan = file_index_plan(
        {"file-index.bitmap.columns": "m[a],m[c]", "file-index.bitmap.m.version": "1"},
        FIELDS,
    )
    builder = FileIndexBuilder(plan)
    ids = pa.array(range(len(MAPS)), pa.int32())
    batch = pa.record_batch({"id": ids, "m": pa.array(MAPS, MAP)})
    for start in range(0, len(MAPS), 3):
        builder.write(batch.slice(start, 3))
    result = builder.finish()
    found = sections(result.embedded or result.sidecar)
    assert set(found) == {("m[a]", "bitmap"), ("m[c]", "bitmap")}
    for key in ("a", "c"):
        expected = records(MAPS, key)
        count, by_value, null_rows = bitmap_rows(found[(f"m[{key}]", "bitmap")], "i")
        assert count == len(expected)
        assert null_rows == {r for r, v in enumerate(expected) if v is None}
        assert by_value == {
            v: {r for r, x in enumerate(expected) if x == v} for v in set(expected) - {None}
        }


SCHEMA = pa.schema(
    [
        pa.field("id", pa.int32(), nullable=False),
        pa.field("attrs", pa.map_(pa.string(), pa.int64())),
    ]
)
KEYS = ["color", "size", "weight"]


def test_compaction_outputs_index_each_key_of_their_rows_and_read_back(warehouse):
    options = {
        "file-index.range-bitmap.columns": "attrs[color],attrs[size]",
        "file-index.bloom-filter.columns": "attrs[weight]",
    }
    table = create_table(warehouse, TableSpec("db", "t", SCHEMA, ("id",), 1, (), options))
    rng = random.Random(3)
    model = {}
    for _ in range(4):
        rows = []
        for key in rng.sample(range(60), 30):
            attrs = None
            if rng.random() > 0.1:
                picked = rng.sample(KEYS, rng.randrange(len(KEYS) + 1))
                attrs = [(k, rng.randrange(-5, 20)) for k in picked]
            rows.append({"id": key, "attrs": attrs})
            model[key] = {"id": key, "attrs": attrs}
        write_with_pypaimon(table, pa.Table.from_pylist(rows, schema=SCHEMA))
    compact_open_table(table, TableRef(warehouse, "db.t"), full=True)

    def normal(rows):
        return [{**r, "attrs": None if r["attrs"] is None else sorted(r["attrs"])} for r in rows]

    assert normal(sorted_rows(read_rows(table), ("id",))) == normal(
        sorted_rows(model.values(), ("id",))
    )
    files = compacted_files(table)
    assert files
    for path, meta in files:
        found = sections(blob_of(path, meta))
        assert set(found) == {
            ("attrs[color]", "range-bitmap"),
            ("attrs[size]", "range-bitmap"),
            ("attrs[weight]", "bloom-filter"),
        }
        maps = pq.ParquetFile(path).read().column("attrs").to_pylist()
        for key in ("color", "size"):
            index = RangeBitmap(found[(f"attrs[{key}]", "range-bitmap")], "q")
            expected = records(maps, key)
            assert index.rid == len(expected)
            assert index.values() == {r: v for r, v in enumerate(expected) if v is not None}
