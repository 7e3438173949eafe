"""Executing task plans: rolled output files, correct metadata, upgrades, failure cleanup."""

from __future__ import annotations

import os

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from dagster_paimon.io.kv import kv_schema
from dagster_paimon.io.paths import data_file_path
from dagster_paimon.kinds import health_of
from dagster_paimon.lsm.model.levels import read_levels
from dagster_paimon.partition import Partition
from dagster_paimon.snapshot.entries import live_entries
from tests.conftest import write_with_pypaimon
from tests.lsm.kvmodel import read_rows, sorted_rows
from tests.lsm.tables import KEY, SCHEMA, cdc_table, compact, write_history


def live_files(table):
    snapshot = table.snapshot_manager().get_latest_snapshot()
    return {
        e.file.file_name: (
            e,
            data_file_path(table, Partition.of_row(e.partition), e.bucket, e.file),
        )
        for e in live_entries(table, snapshot, with_stats=True)
    }


def test_output_files_carry_metadata_that_matches_their_contents(warehouse):
    table = cdc_table(warehouse, **{"target-file-size": "1 kb", "metadata.stats-mode": "full"})
    write_history(table, 6)
    report = compact(table, warehouse, full=True)
    new_names = {f.file_name for r in report.results for f in r.new_files}
    assert len(new_names) > len(report.results), "a small target size must roll files"
    for name, (entry, path) in live_files(table).items():
        assert name in new_names
        data = pq.ParquetFile(path).read()
        assert data.schema.equals(kv_schema(table.table_schema))
        meta = entry.file
        assert meta.row_count == data.num_rows
        assert meta.file_size == os.path.getsize(path)
        assert meta.level == 5 and meta.file_source == 1
        assert meta.min_key.values == [data.column("_KEY_id")[0].as_py()]
        assert meta.max_key.values == [data.column("_KEY_id")[-1].as_py()]
        assert pc.all(pc.greater(data.column("_KEY_id")[1:], data.column("_KEY_id")[:-1])).as_py()
        seq = data.column("_SEQUENCE_NUMBER")
        assert (meta.min_sequence_number, meta.max_sequence_number) == (
            pc.min(seq).as_py(),
            pc.max(seq).as_py(),
        )
        assert meta.delete_row_count == 0
        assert set(data.column("_VALUE_KIND").to_pylist()) <= {0, 2}
        assert meta.schema_id == table.table_schema.id
        assert meta.creation_time is not None


def test_large_non_overlapping_files_are_upgraded_without_being_rewritten(warehouse):
    table = cdc_table(warehouse, bucket=1, **{"target-file-size": "1 kb"})
    rows = [
        {"dt": "2024-01-01", "id": i, "name": f"n{i}", "amount": 1.0, "op": "+I"}
        for i in range(200)
    ]
    write_with_pypaimon(table, pa.Table.from_pylist(rows, schema=SCHEMA))
    before = {name: entry for name, (entry, _) in live_files(table).items()}
    assert {e.file.level for e in before.values()} == {0}
    assert all(e.file.file_size >= 0.7 * 1024 for e in before.values())

    report = compact(table, warehouse, full=True)

    assert report.results[0].upgraded_files == len(before)
    assert report.results[0].new_files == ()
    after = {name: entry for name, (entry, _) in live_files(table).items()}
    assert set(after) == set(before)
    for name, entry in after.items():
        old = before[name].file
        assert entry.file.level == 5
        for field in (
            "file_size",
            "row_count",
            "min_sequence_number",
            "max_sequence_number",
            "file_source",
            "creation_time",
            "delete_row_count",
            "schema_id",
        ):
            assert getattr(entry.file, field) == getattr(old, field), field
        assert entry.file.min_key.values == old.min_key.values
    assert sorted_rows(read_rows(table), KEY) == sorted_rows(rows, KEY)


def test_a_failure_mid_rewrite_leaves_the_table_and_directory_as_they_were(warehouse, monkeypatch):
    table = cdc_table(warehouse, **{"target-file-size": "4 kb"})
    model = write_history(table, 6)
    before_files = {n for _, _, ns in os.walk(table.table_path) for n in ns}
    writes = {"n": 0}
    original = pq.ParquetWriter.write_batch

    def failing_write_batch(self, batch, *args, **kwargs):
        writes["n"] += 1
        if writes["n"] == 3:
            raise OSError("injected: storage went away")
        return original(self, batch, *args, **kwargs)

    monkeypatch.setattr(pq.ParquetWriter, "write_batch", failing_write_batch)
    with pytest.raises(OSError, match="injected"):
        compact(table, warehouse, full=True)
    monkeypatch.undo()

    assert {n for _, _, ns in os.walk(table.table_path) for n in ns} == before_files
    assert table.snapshot_manager().get_latest_snapshot().id == 6
    assert sorted_rows(read_rows(table), KEY) == sorted_rows(model.values(), KEY)
    assert health_of(read_levels(table)).aggregate()["level0_files"] > 0
