"""Merge-on-read of one bucket per Spark partition, optionally of some table partitions only."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

import pyarrow as pa
from pypaimon.manifest.schema.data_file_meta import DataFileMeta
from pypaimon.table.file_store_table import FileStoreTable
from pyspark.sql.datasource import InputPartition

from dagster_paimon.errors import InvalidOptionError
from dagster_paimon.io.kv import key_columns
from dagster_paimon.io.read import read_run, run_batch_rows
from dagster_paimon.lsm.merge.kway import MergeEngine, merge_sorted_runs
from dagster_paimon.lsm.model.levels import Levels, read_levels
from dagster_paimon.lsm.model.options import CompactionOptions
from dagster_paimon.lsm.model.runs import LevelSortedRun
from dagster_paimon.options import DELETION_VECTORS, flag
from dagster_paimon.partition import Partition


class BucketSplit(InputPartition):
    """One (partition, bucket) of a snapshot: the files a Spark task merges on read."""

    def __init__(self, partition: Partition, bucket: int, files: tuple[DataFileMeta, ...]):
        super().__init__((partition, bucket))
        self.partition = partition
        self.bucket = bucket
        self.files = files


def check_readable(table: FileStoreTable) -> None:
    """Deletion vectors mark rows our merge would not know are gone; refuse those tables."""
    if flag(table.table_schema.options, DELETION_VECTORS):
        raise InvalidOptionError(
            f"table option '{DELETION_VECTORS}' is true: reading deletion vectors is not "
            "supported by the paimon Spark source; read the table with pypaimon"
        )


def plan_splits(
    table: FileStoreTable, partition: Mapping[str, str] | None = None
) -> list[BucketSplit]:
    """One split per live (partition, bucket) of the latest snapshot, in the given partition."""
    return [
        BucketSplit(b.partition, b.bucket, tuple(b.levels.all_files()))
        for b in read_levels(table, partition=partition).buckets
    ]


def _raw_readable(runs: Sequence[LevelSortedRun]) -> bool:
    """One sorted run without retract rows holds each key once: no merge needed (raw read)."""
    return len(runs) == 1 and all(f.delete_row_count == 0 for f in runs[0].run.files)


def read_split(
    table: FileStoreTable, split: BucketSplit, columns: Sequence[str]
) -> Iterator[pa.RecordBatch]:
    """The live rows of one bucket, merged by the table's merge engine, as `columns`."""
    options = CompactionOptions.from_table_options(table.table_schema.options)
    runs = Levels(split.files, options.num_levels).level_sorted_runs()
    if not runs:
        return
    batch_rows = run_batch_rows(len(runs))
    streams = [
        read_run(table, split.partition, split.bucket, r.run.files, batch_rows) for r in runs
    ]
    if _raw_readable(runs):
        merged: Iterator[pa.RecordBatch] = iter(streams[0])
    else:
        merged = merge_sorted_runs(
            streams,
            MergeEngine.for_table(table.table_schema),
            drop_delete=True,
            key_columns=key_columns(table.table_schema),
        )
    for batch in merged:
        if batch.num_rows:
            yield pa.RecordBatch.from_arrays(
                [batch.column(c) for c in columns], names=list(columns)
            )
