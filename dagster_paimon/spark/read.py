"""Merge-on-read of one bucket per Spark partition, optionally of some table partitions only.

As Paimon's batch readers: deletion-vector tables (unless deletion-vectors.merge-on-read) and
first-row tables skip level 0, rows their deletion vectors mark are skipped, and levels whose
files hold no retractions are read raw when keys are unique across them (deletion vectors,
first-row) or when there is one run.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

import numpy as np
import pyarrow as pa
from pyspark.sql.datasource import InputPartition

from dagster_paimon.format.manifest import DataFileMeta
from dagster_paimon.format.table import FileStoreTable
from dagster_paimon.io.index import BucketVectors, VectorIndex
from dagster_paimon.io.kv import key_columns, value_schema, values_only
from dagster_paimon.io.read import read_file, read_run, run_batch_rows
from dagster_paimon.io.vectors import positions_of
from dagster_paimon.lsm.merge.kway import MergeEngine, merge_sorted_runs
from dagster_paimon.lsm.merge.wrappers import ChangelogRule, LookupMerge
from dagster_paimon.lsm.model.levels import Levels, read_levels
from dagster_paimon.lsm.model.options import CompactionOptions
from dagster_paimon.lsm.model.runs import LevelSortedRun
from dagster_paimon.options import FIRST_ROW
from dagster_paimon.partition import Partition


class BucketSplit(InputPartition):
    """One (partition, bucket) of a snapshot: the files a Spark task merges on read."""

    def __init__(
        self,
        partition: Partition,
        bucket: int,
        files: tuple[DataFileMeta, ...],
        dv_index: VectorIndex | None = None,
    ):
        super().__init__((partition, bucket))
        self.partition = partition
        self.bucket = bucket
        self.files = files
        self.dv_index = dv_index


def plan_splits(
    table: FileStoreTable, partition: Mapping[str, str] | None = None
) -> list[BucketSplit]:
    """One split per live (partition, bucket) of the latest snapshot, in the given partition."""
    return [
        BucketSplit(b.partition, b.bucket, tuple(b.levels.all_files()), b.dv_index)
        for b in read_levels(table, partition=partition).buckets
    ]


def _raw_readable(runs: Sequence[LevelSortedRun], unique_keys: bool) -> bool:
    """Runs without retract rows whose keys are unique across them need no merge (raw read)."""
    no_retracts = all(f.delete_row_count == 0 for r in runs for f in r.run.files)
    return no_retracts and (unique_keys or len(runs) == 1)


def _merged(
    table: FileStoreTable,
    split: BucketSplit,
    runs: Sequence[LevelSortedRun],
    deleted: Mapping[str, np.ndarray],
    options: CompactionOptions,
) -> Iterator[pa.RecordBatch]:
    """Runs merged by the merge engine; lookup tables merge level 0 with the newest record
    above it only (Java's LookupMergeFunction, which their readers use too)."""
    schema = table.table_schema
    engine = MergeEngine.for_table(schema)
    keys = key_columns(schema)
    lookup = options.needs_lookup and options.merge_engine != FIRST_ROW
    batch_rows = run_batch_rows(len(runs))
    streams = [
        read_run(
            table,
            split.partition,
            split.bucket,
            r.run.files,
            batch_rows,
            deleted=deleted,
            with_level=lookup,
        )
        for r in runs
    ]
    rule = ChangelogRule.for_table(schema)
    return merge_sorted_runs(
        streams,
        engine,
        drop_delete=True,
        key_columns=keys,
        slice_merge=LookupMerge(engine, keys, rule, drop_delete=True) if lookup else None,
    )


def read_split(
    table: FileStoreTable, split: BucketSplit, columns: Sequence[str]
) -> Iterator[pa.RecordBatch]:
    """The live rows of one bucket, merged by the table's merge engine, as `columns`; an append
    table's files (all at level 0) read one after another, as Java's raw reads do."""
    options = CompactionOptions.from_table_options(table.table_schema.options)
    runs = Levels(split.files, options.num_levels).level_sorted_runs()
    append = values_only(table.table_schema)
    if options.skips_level0_on_read and not append:  # batchScanSkipLevel0: key-value tables
        runs = [r for r in runs if r.level > 0]
    if not runs:
        return
    vectors = BucketVectors.restore(table, split.partition, split.bucket, split.dv_index)
    deleted = {name: positions_of(v) for name, v in vectors.vectors.items()}
    if append:
        values = value_schema(table.table_schema).names
        merged: Iterator[pa.RecordBatch] = (
            b
            for r in runs
            for meta in r.run.files
            for b in read_file(
                table,
                split.partition,
                split.bucket,
                meta,
                run_batch_rows(1),
                columns=values,
                deleted=deleted.get(meta.file_name),
            )
        )
    elif _raw_readable(runs, options.skips_level0_on_read):
        batch_rows = run_batch_rows(1)
        merged = (
            b
            for r in runs
            for b in read_run(
                table, split.partition, split.bucket, r.run.files, batch_rows, deleted=deleted
            )
        )
    else:
        merged = _merged(table, split, runs, deleted, options)
    for batch in merged:
        if batch.num_rows:
            yield pa.RecordBatch.from_arrays(
                [batch.column(c) for c in columns], names=list(columns)
            )
