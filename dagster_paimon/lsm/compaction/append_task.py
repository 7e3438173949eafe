"""Execute one append compaction task: its files' rows, in task order, into new level-0 files."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator

import pyarrow as pa
from pypaimon.table.file_store_table import FileStoreTable

from dagster_paimon.commit.changes import BucketChange
from dagster_paimon.io.kv import value_schema
from dagster_paimon.io.read import READ_BUFFER_ROWS, read_file
from dagster_paimon.io.write import COMPACT_FILE_SOURCE, RollingWriter, write_all
from dagster_paimon.lsm.compaction.append_plan import AppendTask
from dagster_paimon.lsm.compaction.executor import Work, discard_results
from dagster_paimon.lsm.compaction.task import CompactResult

log = logging.getLogger(__name__)


def _rows(table: FileStoreTable, task: AppendTask) -> Iterator[pa.RecordBatch]:
    """Every row of the task's files, file after file, in the table's current schema."""
    columns = value_schema(table.table_schema).names
    for meta in task.files:
        yield from read_file(
            table, task.partition, task.bucket, meta, READ_BUFFER_ROWS, columns=columns
        )


def run_append_task(table: FileStoreTable, task: AppendTask) -> CompactResult:
    """Rewrite the files (BaseAppendFileStoreWrite.compactRewrite); nothing left on failure."""
    start = time.perf_counter()
    writer = RollingWriter(
        table,
        task.partition,
        task.bucket,
        0,
        COMPACT_FILE_SOURCE,
        first_sequence=task.first_sequence,
    )
    new_files = tuple(write_all(writer, _rows(table, task)))
    result = CompactResult(
        change=BucketChange(
            task.partition,
            task.bucket,
            task.total_buckets,
            deleted=task.files,
            added=new_files,
            new_files=new_files,
        ),
        bytes_read=task.rewritten_bytes,
        bytes_written=sum(f.file_size for f in new_files),
        rewritten_files=len(task.files),
        upgraded_files=0,
        seconds=time.perf_counter() - start,
    )
    log.info(
        "compacted %s bucket %d of an append table: %d files into %d, %.1f MB read in %.2f s",
        task.partition.label(),
        task.bucket,
        len(task.files),
        len(new_files),
        result.bytes_read / 1e6,
        result.seconds,
    )
    return result


APPEND_COMPACTION: Work[AppendTask, CompactResult] = Work(
    "append tasks", run_append_task, discard_results
)
