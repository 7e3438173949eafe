"""Execute one append compaction task: its files' rows, in task order, into new level-0 files."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator

import pyarrow as pa

from dagster_paimon.commit.changes import BucketChange
from dagster_paimon.format.manifest import IndexFileMeta
from dagster_paimon.format.table import FileStoreTable
from dagster_paimon.io.index import BucketVectors
from dagster_paimon.io.kv import value_schema
from dagster_paimon.io.paths import delete_data_files
from dagster_paimon.io.read import READ_BUFFER_ROWS, coalesced, read_files
from dagster_paimon.io.vectors import positions_of
from dagster_paimon.io.write import COMPACT_FILE_SOURCE, RollingWriter, write_all
from dagster_paimon.lsm.compaction.append_plan import AppendTask
from dagster_paimon.lsm.compaction.executor import Work, discard_results
from dagster_paimon.lsm.compaction.task import CompactResult
from dagster_paimon.lsm.model.append_options import UNAWARE_BUCKET
from dagster_paimon.options import bucket

log = logging.getLogger(__name__)


def _rows(
    table: FileStoreTable, task: AppendTask, vectors: BucketVectors | None
) -> Iterator[pa.RecordBatch]:
    """Every row of the task's files no deletion vector marks, file after file, in the table's
    current schema."""
    deleted = (
        {m.file_name: positions_of(v) for m in task.files if (v := vectors.of(m.file_name))}
        if vectors is not None
        else {}
    )
    return read_files(
        table,
        task.partition,
        task.bucket,
        task.files,
        READ_BUFFER_ROWS,
        columns=value_schema(table.table_schema).names,
        deleted=deleted,
    )


def _batches(
    table: FileStoreTable, task: AppendTask, vectors: BucketVectors | None
) -> Iterator[pa.RecordBatch]:
    """The task's rows in batches of READ_BUFFER_ROWS, however small its files: each batch is
    one row group of the output (small files' own batches would make as many tiny ones)."""
    return coalesced(_rows(table, task, vectors), READ_BUFFER_ROWS)


def _rewritten_index(
    table: FileStoreTable, task: AppendTask, vectors: BucketVectors | None
) -> tuple[IndexFileMeta | None, bool]:
    """The task's index files without the rewritten files' vectors, as one file (None if they
    held none of them), and whether they go instead: an unaware-bucket partition's once no
    vector of theirs is left (AppendDeleteFileMaintainer; a bucket keeps an empty one, as
    BucketedDvMaintainer does)."""
    if vectors is None:
        return None, False
    vectors.remove(f.file_name for f in task.files)
    if not vectors.modified:
        return None, False
    if not vectors.vectors and bucket(table.table_schema.options) == UNAWARE_BUCKET:
        return None, True
    return vectors.write(table, task.partition, task.bucket), False


def run_append_task(table: FileStoreTable, task: AppendTask) -> CompactResult:
    """Rewrite the files (BaseAppendFileStoreWrite.compactRewrite) without their deleted rows,
    and the bucket's index without their vectors; nothing left on failure."""
    start = time.perf_counter()
    vectors = (
        BucketVectors.restore(table, task.partition, task.bucket, task.dv_index)
        if task.dv_index is not None
        else None
    )
    writer = RollingWriter(
        table,
        task.partition,
        task.bucket,
        0,
        COMPACT_FILE_SOURCE,
        first_sequence=task.first_sequence,
    )
    new_files = tuple(write_all(writer, _batches(table, task, vectors)))
    try:
        index, dropped = _rewritten_index(table, task, vectors)
    except BaseException:
        delete_data_files(table, task.partition, task.bucket, new_files)
        raise
    result = CompactResult(
        change=BucketChange(
            task.partition,
            task.bucket,
            task.total_buckets,
            deleted=task.files,
            added=new_files,
            new_files=new_files,
            index=index,
            base_index=task.dv_index.names if task.dv_index else (),
            drop_index=dropped,
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
