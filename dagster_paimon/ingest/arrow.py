"""Ingest an Arrow table in this process: level-0 files and one snapshot, no Spark needed."""

from __future__ import annotations

import time

import pyarrow as pa

from dagster_paimon.commit.users import new_commit_user
from dagster_paimon.errors import InvalidArgumentError
from dagster_paimon.format.table import FileStoreTable
from dagster_paimon.ingest.commit import commit_ingest
from dagster_paimon.ingest.result import IngestResult
from dagster_paimon.io.write import write_all
from dagster_paimon.lsm.model.levels import read_levels
from dagster_paimon.lsm.write.dynamic import DynamicAssigner, hash_indexes_at
from dagster_paimon.lsm.write.layout import check_writable, plan_write_layout
from dagster_paimon.lsm.write.level0 import Level0Writer, max_sequences
from dagster_paimon.partition import Partition
from dagster_paimon.table import is_dynamic

MODES = ("append", "overwrite")


def ingest_arrow(table: FileStoreTable, data: pa.Table, *, mode: str = "append") -> IngestResult:
    """Write `data` as level-0 files and commit one APPEND (or OVERWRITE) snapshot.

    Into a primary-key table rows are folded per key; into an append table they are written
    as they come (bucketed by the bucket key, or all into bucket 0 of an unaware table).

    Overwrite replaces exactly the partitions `data` holds rows of (the whole table if it is
    unpartitioned). Bad input raises before anything is written; on failure nothing changes.

    Raises InvalidArgumentError (mode), SchemaMismatchError (data that does not fit the table),
    InvalidOptionError (a format or option we cannot write), UnsupportedLayoutError; not input:
    CommitConflictError, TransientStoreError.
    """
    if mode not in MODES:
        raise InvalidArgumentError(f"mode must be one of {list(MODES)}, got {mode!r}")
    start = time.perf_counter()
    check_writable(table, overwrite=mode == "overwrite")
    layout = plan_write_layout(table.table_schema, data.schema)
    levels = read_levels(table)
    indexes = hash_indexes_at(table, levels.snapshot_id, overwrite=mode == "overwrite")
    dynamic = is_dynamic(table.table_schema)
    writer = Level0Writer(
        table,
        layout,
        max_sequences(levels),
        assigner=DynamicAssigner(table, indexes) if dynamic else None,
        hash_indexes=indexes,
    )
    writes = write_all(writer, data.to_batches())
    overwrite = None
    if mode == "overwrite":
        overwrite = writer.partitions if table.partition_keys else {Partition((), ())}
    outcome = commit_ingest(
        table,
        writes,
        overwrite=overwrite,
        commit_user=new_commit_user("ingest"),
        identifier=time.time_ns(),
    )
    snapshot = outcome.snapshot if outcome else None
    return IngestResult.of(table, snapshot, time.perf_counter() - start)
