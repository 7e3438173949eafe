"""Our writer's data files carry the table's file indexes: compaction outputs of a real table,
their index read back (tests/io/fileindex/reader.py) against the rows each file holds; expiry
and orphan removal treat a `.index` sidecar as part of its data file; what we refuse."""

from __future__ import annotations

import os
import shutil
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pypaimon.schema.data_types import AtomicType, DataField

from dagster_paimon.errors import SchemaMismatchError, UnsupportedLayoutError
from dagster_paimon.io.fileindex import FileIndexBuilder, file_index_plan
from dagster_paimon.io.fileindex.values import java_type
from dagster_paimon.io.paths import bucket_file_path
from dagster_paimon.io.write import COMPACT_FILE_SOURCE
from dagster_paimon.lsm.model.levels import read_levels
from tests.hooks import expire_snapshots, remove_orphans
from tests.io.fileindex.reader import bitmap_rows, bloom_may_contain, bsi_values, sections
from tests.lsm.tables import cdc_table, compact
from tests.maintenance.histories import EXPIRE_ALL_BUT_LAST, append, history, later_ms
from tests.maintenance.oracle import age_tree, all_files

INDEXED = {
    "file-index.bloom-filter.columns": "name",
    "file-index.bloom-filter.name.items": "2000",
    "file-index.bitmap.columns": "amount,op",
    "file-index.bsi.columns": "id",
}
SMALL = {"file-index.bitmap.columns": "op", "file-index.bitmap.op.version": "1"}


def compacted_files(table) -> list[tuple[str, object]]:
    """(path, meta) of every live file our compaction wrote."""
    return [
        (bucket_file_path(table, b.partition, b.bucket, f.file_name), f)
        for b in read_levels(table).buckets
        for f in b.levels.all_files()
        if f.file_source == COMPACT_FILE_SOURCE
    ]


def blob_of(path: str, meta) -> bytes:
    """The file's index: embedded in its meta, or the sidecar its extra files name."""
    if meta.embedded_index is not None:
        assert not meta.extra_files
        return meta.embedded_index
    assert list(meta.extra_files) == [os.path.basename(path) + ".index"]
    with open(path + ".index", "rb") as f:
        return f.read()


@pytest.mark.parametrize(("options", "embedded"), [(INDEXED, False), (SMALL, True)])
def test_compaction_outputs_index_their_rows(warehouse, options, embedded):
    table = history(warehouse, 4, compact_after=(3,), **options)
    files = compacted_files(table)
    assert files
    plan = file_index_plan(table.table_schema.options, table.table_schema.fields)
    types = {f.name: java_type(f.type) for f in table.table_schema.fields}
    for path, meta in files:
        assert (meta.embedded_index is not None) == embedded
        blob = blob_of(path, meta)
        rows = pq.ParquetFile(path).read()
        # the same index, fed in other slices
        builder = FileIndexBuilder(plan)
        for batch in rows.to_batches(max_chunksize=7):
            builder.write(batch)
        result = builder.finish()
        assert (result.embedded or result.sidecar) == blob
        found = sections(blob)
        assert {c for c, _ in found} == {s.name for s in plan.specs}
        data = rows.to_pydict()
        for (column, kind), body in found.items():
            values = data[column]
            if kind == "bitmap":
                fmt = "s" if column == "op" else "d"
                count, by_value, null_rows = bitmap_rows(body, fmt)
                assert count == len(values)
                expected: dict = {}
                for r, v in enumerate(values):
                    expected.setdefault(v, set()).add(r)
                assert null_rows == expected.pop(None, set())
                assert by_value == expected
            elif kind == "bsi":
                count, by_row = bsi_values(body)
                assert count == len(values)
                assert by_row == {r: v for r, v in enumerate(values) if v is not None}
            else:
                column_values = rows.column(column).combine_chunks()
                assert bloom_may_contain(body, column_values, types[column]).all()


def test_expiry_deletes_a_sidecar_with_its_file(warehouse):
    table = history(warehouse, 4, compact_after=(1,), **INDEXED)
    first = {p for p, m in compacted_files(table)}
    append(table, 10)
    compact(table, warehouse, full=True)
    assert all(os.path.exists(p + ".index") for p in first)
    expire_snapshots(table, overrides=EXPIRE_ALL_BUT_LAST, now_ms=later_ms())
    live = {p for p, _ in compacted_files(table)}
    assert first and not first & live
    assert not any(os.path.exists(p) or os.path.exists(p + ".index") for p in first)
    assert all(os.path.exists(p + ".index") for p in live)


def test_orphan_removal_keeps_live_sidecars_and_reclaims_dead_ones(warehouse):
    table = history(warehouse, 3, compact_after=(2,), **INDEXED)
    live = [p for p, _ in compacted_files(table)]
    dead = os.path.join(os.path.dirname(live[0]), "data-dead-0.parquet.index")
    shutil.copy(live[0] + ".index", dead)
    age_tree(table.table_path)
    result = remove_orphans(table)
    assert list(result.orphans) == [dead]
    assert not os.path.exists(dead)
    assert all(os.path.exists(p + ".index") for p in live)
    assert all(p + ".index" in all_files(table.table_path) for p in live)


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"file-index.bloom-filter.columns": "name[k]"}, "not a MAP"),
        ({"file-index.bitmap.columns": "nope"}, "lacks"),
        ({"file-index.bloom-filter.columns": "op", "file-index.bsi.columns": "name"}, "bsi"),
    ],
)
def test_unimplemented_indexes_are_refused_before_anything_is_written(warehouse, options, named):
    table = cdc_table(warehouse, **options)
    append(table, 1)
    before = all_files(table.table_path)
    with pytest.raises(UnsupportedLayoutError, match=named):
        compact(table, warehouse, full=True)
    assert all_files(table.table_path) == before


def test_bsi_round_trips_negative_values_and_decimals():
    fields = [
        DataField(0, "d", AtomicType("DECIMAL(12, 3)")),
        DataField(1, "t", AtomicType("TIMESTAMP(6)")),
    ]
    plan = file_index_plan({"file-index.bsi.columns": "d,t"}, fields)
    decimals = [None, -5, 12345678901, 0, -1]
    micros = [-1_500_250, None, 0, 1_700_000_000_000_123, 7]
    batch = pa.record_batch(
        {
            "d": pa.array(
                [None if v is None else Decimal(v).scaleb(-3) for v in decimals],
                pa.decimal128(12, 3),
            ),
            "t": pa.array(micros, pa.timestamp("us")),
        }
    )
    builder = FileIndexBuilder(plan)
    builder.write(batch)
    result = builder.finish()
    found = sections(result.embedded or result.sidecar)
    for column, expected in (("d", decimals), ("t", micros)):
        _, by_row = bsi_values(found[(column, "bsi")])
        assert by_row == {r: v for r, v in enumerate(expected) if v is not None}
    builder = FileIndexBuilder(file_index_plan({"file-index.bsi.columns": "t"}, fields))
    builder.write(pa.record_batch({"t": pa.array([np.iinfo(np.int64).min], pa.timestamp("us"))}))
    with pytest.raises(SchemaMismatchError, match="MIN_VALUE"):
        builder.finish()  # Java's writer fails on it too
