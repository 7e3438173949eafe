"""Reading a sorted run: its files streamed in bounded batches, in the table's current KV schema."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import pyarrow as pa
import pyarrow.parquet as pq
from pypaimon.manifest.schema.data_file_meta import DataFileMeta
from pypaimon.schema.table_schema import TableSchema
from pypaimon.table.file_store_table import FileStoreTable

from dagster_paimon.errors import SchemaMismatchError
from dagster_paimon.io.kv import kv_schema
from dagster_paimon.io.paths import data_file_path
from dagster_paimon.partition import Partition

READ_BUFFER_ROWS = 1 << 17
READ_BUFFER_BYTES = 1 << 20
MIN_RUN_BATCH_ROWS = 1024


def run_batch_rows(runs: int) -> int:
    """Rows per batch when `runs` runs are read at once: one shared buffer, split evenly."""
    return max(MIN_RUN_BATCH_ROWS, READ_BUFFER_ROWS // max(1, runs))


def _aligned(batch: pa.RecordBatch, target: pa.Schema) -> pa.RecordBatch:
    """A file's batch in the table's current KV schema: missing columns as nulls, types cast."""
    if batch.schema.equals(target):
        return batch
    columns = []
    for f in target:
        if f.name in batch.schema.names:
            columns.append(batch.column(f.name).cast(f.type))
        elif f.nullable:
            columns.append(pa.nulls(batch.num_rows, f.type))
        else:
            raise SchemaMismatchError(f"data file lacks required column {f.name!r}")
    return pa.RecordBatch.from_arrays(columns, schema=target)


def _check_evolution(table: FileStoreTable, schema_id: int) -> None:
    """Only additive schema changes can be aligned by name; renames and drops cannot."""
    old: TableSchema | None = table.schema_manager.get_schema(schema_id)
    if old is None:
        raise SchemaMismatchError(f"schema {schema_id} of {table.identifier} is missing")
    current = {f.id: f.name for f in table.table_schema.fields}
    renamed = [f.name for f in old.fields if current.get(f.id, f.name) != f.name]
    dropped = [f.name for f in old.fields if f.id not in current]
    if renamed or dropped:
        raise SchemaMismatchError(
            f"files of schema {schema_id} have renamed {renamed} or dropped {dropped} columns; "
            "compaction only aligns files across added columns"
        )


def read_run(
    table: FileStoreTable,
    partition: Partition,
    bucket: int,
    files: Iterable[DataFileMeta],
    batch_rows: int,
) -> Iterator[pa.RecordBatch]:
    """Stream a sorted run file after file in bounded batches, in the current KV schema."""
    target = kv_schema(table.table_schema)
    for meta in files:
        if meta.schema_id != table.table_schema.id:
            _check_evolution(table, meta.schema_id)
        path = data_file_path(table, partition, bucket, meta)
        with table.file_io.new_input_stream(path) as stream:
            reader = pq.ParquetFile(stream, buffer_size=READ_BUFFER_BYTES, pre_buffer=False)
            for batch in reader.iter_batches(batch_size=batch_rows):
                yield _aligned(batch, target)
