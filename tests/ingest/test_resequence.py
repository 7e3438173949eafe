"""Renumbering an ingest's level-0 files: same rows, order, statistics, format and layout."""

from __future__ import annotations

from dataclasses import replace

import pyarrow as pa
import pytest

from dagster_paimon.ingest.resequence import resequenced
from dagster_paimon.io.formats import open_reader
from dagster_paimon.io.kv import SEQUENCE_NUMBER
from dagster_paimon.io.paths import data_file_path
from dagster_paimon.io.read import READ_BUFFER_ROWS, read_file
from dagster_paimon.io.write import write_all
from dagster_paimon.lsm.write.layout import plan_write_layout
from dagster_paimon.lsm.write.level0 import Level0Writer
from dagster_paimon.table import create_table
from tests.conftest import data_files_on_disk, orders_spec

SHIFT = 1000
LAYOUTS = {
    "parquet": {},
    "parquet-thin": {"data-file.thin-mode": "true"},
    "orc": {"file.format": "orc"},
    "avro": {"file.format": "avro"},
}


def upserts_and_deletes() -> pa.Table:
    """One partition and bucket: inserts, then an update and a delete of earlier keys."""
    ids = [*range(10), 3, 7]
    kinds = ["+I"] * 10 + ["+U", "-D"]
    return pa.table(
        {
            "dt": ["2024-01-01"] * len(ids),
            "id": ids,
            "v": [f"v{i}" for i in range(len(ids))],
            "_row_kind": kinds,
        }
    )


def file_columns(table, change, meta) -> list[str]:
    """The columns as stored in the file (thin mode stores no _KEY_ columns)."""
    path = data_file_path(table, change.partition, change.bucket, meta)
    with table.file_io.new_input_stream(path) as stream:
        return list(open_reader(stream, meta.file_name).names)


def kv_rows(table, change, meta) -> pa.Table:
    """A file's records in the current KV layout."""
    batches = read_file(table, change.partition, change.bucket, meta, READ_BUFFER_ROWS)
    return pa.Table.from_batches(list(batches))


@pytest.mark.parametrize("options", LAYOUTS.values(), ids=list(LAYOUTS))
def test_renumbered_files_keep_rows_order_statistics_and_layout(warehouse, options):
    table = create_table(warehouse, orders_spec(bucket=1, **options))
    data = upserts_and_deletes()
    layout = plan_write_layout(table.table_schema, data.schema)
    writer = Level0Writer(table, layout, {}, buffer_bytes=1)  # a flush per batch: two files
    (write,) = write_all(writer, [*data.slice(0, 10).to_batches(), *data.slice(10).to_batches()])
    change = write.change(1)
    assert len(change.new_files) == 2

    moved = resequenced(table, change, SHIFT)

    assert moved.added == moved.new_files and len(moved.new_files) == 2
    for old, new in zip(change.new_files, moved.new_files, strict=True):
        assert new.file_name != old.file_name
        assert new.file_name.rsplit(".", 1)[1] == old.file_name.rsplit(".", 1)[1]
        assert (new.min_sequence_number, new.max_sequence_number) == (
            old.min_sequence_number + SHIFT,
            old.max_sequence_number + SHIFT,
        )
        same = replace(
            new,
            file_name=old.file_name,
            file_size=old.file_size,
            file_path=old.file_path,
            creation_time=old.creation_time,
            min_sequence_number=old.min_sequence_number,
            max_sequence_number=old.max_sequence_number,
        )
        assert same == old, "keys, statistics, row and delete counts, level, source unchanged"
        assert file_columns(table, moved, new) == file_columns(table, change, old)
        before, after = kv_rows(table, change, old), kv_rows(table, moved, new)
        assert after.column(SEQUENCE_NUMBER).to_pylist() == [
            s + SHIFT for s in before.column(SEQUENCE_NUMBER).to_pylist()
        ]
        assert after.drop_columns([SEQUENCE_NUMBER]) == before.drop_columns([SEQUENCE_NUMBER])
    names = {f.file_name for f in (*change.new_files, *moved.new_files)}
    assert names == data_files_on_disk(table), "the originals are left to the caller"
    if options.get("data-file.thin-mode"):
        assert not [c for c in file_columns(table, moved, moved.new_files[0]) if "_KEY_" in c]


def test_a_sequence_number_overflow_raises_and_leaves_no_file(warehouse):
    table = create_table(warehouse, orders_spec(bucket=1))
    data = upserts_and_deletes()
    writer = Level0Writer(table, plan_write_layout(table.table_schema, data.schema), {})
    (write,) = write_all(writer, data.to_batches())
    written = data_files_on_disk(table)

    with pytest.raises(pa.ArrowInvalid, match="overflow"):
        resequenced(table, write.change(1), 2**63 - 5)

    assert data_files_on_disk(table) == written
