"""Level-0 files of an ingest that lost a bucket's race, renumbered to follow the winner."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import replace

import pyarrow as pa
import pyarrow.compute as pc

from dagster_paimon.commit.changes import BucketChange
from dagster_paimon.format.manifest import DataFileMeta
from dagster_paimon.format.table import FileStoreTable
from dagster_paimon.io.kv import SEQUENCE_NUMBER
from dagster_paimon.io.paths import delete_data_files
from dagster_paimon.io.read import READ_BUFFER_ROWS, read_file
from dagster_paimon.io.write import RollingWriter, write_all


def shifted(batches: Iterable[pa.RecordBatch], shift: int) -> Iterator[pa.RecordBatch]:
    """The batches with every sequence number moved up by `shift` (overflow raises)."""
    for batch in batches:
        at = batch.schema.get_field_index(SEQUENCE_NUMBER)
        moved = pc.add_checked(batch.column(at), pa.scalar(shift, pa.int64()))
        yield batch.set_column(at, batch.schema.field(at), moved)


def resequenced(table: FileStoreTable, change: BucketChange, shift: int) -> BucketChange:
    """The change with each new file rewritten by the same writer, at its level and source,
    every sequence number moved up by `shift`: rows, their order and statistics are kept.

    The originals stay; on failure the rewritten files are deleted.
    """
    files: list[DataFileMeta] = []
    try:
        for meta in change.new_files:
            writer = RollingWriter(
                table, change.partition, change.bucket, meta.level, meta.file_source
            )
            rows = read_file(table, change.partition, change.bucket, meta, READ_BUFFER_ROWS)
            files += write_all(writer, shifted(rows, shift))
    except BaseException:
        delete_data_files(table, change.partition, change.bucket, files)
        raise
    return replace(change, added=tuple(files), new_files=tuple(files))
