"""Level-0 files of one Spark task: buffer rows, number them, fold each key, roll parquet files.

This is Paimon's writer path (MergeTreeWriter flushing its write buffer) for a batch job: rows are
buffered up to `write-buffer-size`, then each (partition, bucket) of the buffer gets sequence
numbers in input order, continuing from the bucket's maximum, is sorted by key, folded to one
record per key by the table's merge engine, and written as level-0 files (file source APPEND).
An append table's rows are written as they come, numbered the same way (Java's AppendOnlyWriter);
in an unaware-bucket table (bucket -1) every writer numbers from 0 into bucket 0.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from itertools import pairwise

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dagster_paimon.commit.changes import BucketChange
from dagster_paimon.errors import InvalidArgumentError, UnsupportedLayoutError
from dagster_paimon.format.manifest import DataFileMeta, IndexFileMeta
from dagster_paimon.format.table import FileStoreTable
from dagster_paimon.io.hashes import read_hashes, write_hashes
from dagster_paimon.io.index import delete_index_file
from dagster_paimon.io.kv import (
    RETRACT_KINDS,
    SEQUENCE_NUMBER,
    key_columns,
    kv_schema,
    trimmed_primary_keys,
    values_only,
)
from dagster_paimon.io.paths import delete_data_files
from dagster_paimon.io.write import APPEND_FILE_SOURCE, RollingWriter, write_all
from dagster_paimon.lsm.merge.kway import MergeEngine, merge_sorted_runs
from dagster_paimon.lsm.model.levels import TableLevels
from dagster_paimon.lsm.write.bucket import UNAWARE_BUCKET, assign_buckets, total_buckets
from dagster_paimon.lsm.write.dynamic import (
    MAX_BUCKET_IDS,
    DynamicAssigner,
    check_dynamic_writable,
    key_hashes,
)
from dagster_paimon.lsm.write.layout import BUCKET_COLUMN, WriteLayout, to_table_types
from dagster_paimon.lsm.write.rowkinds import RowKindFilter, parse_row_kinds
from dagster_paimon.options import (
    DYNAMIC_BUCKET,
    IGNORE_DELETE,
    WRITE_BUFFER_SIZE,
    memory_bytes,
    read_option,
)
from dagster_paimon.partition import Partition

log = logging.getLogger(__name__)

SEQUENCE_STRIDE = 1 << 32
DEFAULT_WRITE_BUFFER = 256 * 1024 * 1024
RUN_BATCH_ROWS = 256 * 1024

BucketKey = tuple[Partition, int]


@dataclass(frozen=True)
class BucketWrite:
    """Level-0 files one task wrote into one bucket, and the first sequence number it used.

    A dynamic-bucket write also rewrote the bucket's HASH `index` when it added keys, replacing
    `base_index` (the name of the file it restored, if any).
    """

    partition: Partition
    bucket: int
    files: tuple[DataFileMeta, ...]
    first_sequence: int
    index: IndexFileMeta | None = None
    base_index: str | None = None

    def change(self, total_buckets: int) -> BucketChange:
        """The files as a commit adds them."""
        return BucketChange(
            self.partition,
            self.bucket,
            total_buckets,
            added=self.files,
            new_files=self.files,
            index=self.index,
            base_index=(self.base_index,) if self.base_index else (),
        )


def check_append_kinds(kinds: np.ndarray) -> None:
    """An append table takes inserts only (Java's AppendOnlyWriter takes +I and +U)."""
    retracts = np.isin(kinds, RETRACT_KINDS)
    if retracts.any():
        raise InvalidArgumentError(
            f"an append table takes only +I and +U rows, got {int(retracts.sum())} -U/-D rows; "
            f"set the table option '{IGNORE_DELETE}' to drop them"
        )


def max_sequences(levels: TableLevels) -> dict[BucketKey, int]:
    """Each bucket's largest sequence number: its next writer continues from there (-1 empty)."""
    return {
        (b.partition, b.bucket): max(
            (f.max_sequence_number for f in b.levels.all_files()), default=-1
        )
        for b in levels.buckets
    }


def write_buffer_bytes(options: Mapping[str, str]) -> int:
    """Paimon's `write-buffer-size`: rows a task holds before flushing level-0 files."""
    return read_option(options, WRITE_BUFFER_SIZE, memory_bytes, DEFAULT_WRITE_BUFFER)


def sorted_by(table: pa.Table, columns: list[str]) -> bool:
    """Whether rows are already in ascending order of these columns (ties allowed)."""
    n = table.num_rows
    if n < 2:
        return True
    before = np.zeros(n - 1, dtype=bool)
    tied = np.ones(n - 1, dtype=bool)
    for name in columns:
        column = table.column(name).combine_chunks()
        head, tail = column.slice(0, n - 1), column.slice(1)
        before |= tied & np.asarray(pc.fill_null(pc.less(head, tail), False))
        tied &= np.asarray(pc.fill_null(pc.equal(head, tail), False))
    return bool((before | tied).all())


def _boundaries(table: pa.Table, columns: list[str]) -> np.ndarray:
    """Start positions of runs of equal values in these (grouped) columns, plus the end."""
    n = table.num_rows
    starts = np.zeros(n, dtype=bool)
    starts[0] = True
    for name in columns:
        column = table.column(name).combine_chunks()
        starts[1:] |= np.asarray(
            pc.fill_null(pc.not_equal(column.slice(1), column.slice(0, n - 1)), True)
        )
    return np.append(np.flatnonzero(starts), n)


class Level0Writer:
    """Writes one task's rows as level-0 files; `abort` removes everything it wrote."""

    def __init__(
        self,
        table: FileStoreTable,
        layout: WriteLayout,
        base_sequences: Mapping[BucketKey, int],
        *,
        sequence_offset: int = 0,
        buffer_bytes: int | None = None,
        num_buckets: int | None = None,
        assigner: DynamicAssigner | None = None,
        hash_indexes: Mapping[BucketKey, IndexFileMeta] | None = None,
    ):
        schema = table.table_schema
        self.table = table
        self.layout = layout
        self.num_buckets = num_buckets or total_buckets(schema)
        self.append = values_only(schema)
        self.unaware = self.append and self.num_buckets == UNAWARE_BUCKET
        self.dynamic = self.num_buckets == DYNAMIC_BUCKET and not self.append
        if self.dynamic:
            check_dynamic_writable(schema)
        self.assigner = assigner
        self.hash_indexes = dict(hash_indexes or {})
        self._hashes: dict[BucketKey, list[np.ndarray]] = {}
        self._indexes: list[BucketWrite] = []
        self.partition_keys = list(schema.partition_keys)
        self.trimmed_keys = trimmed_primary_keys(schema)
        self.keys = key_columns(schema)
        self.kv = kv_schema(schema)
        self.engine = MergeEngine.for_table(schema)
        self.kind_filter = RowKindFilter(schema.options)
        # an unaware-bucket writer ignores previous files (Java's AppendFileStoreWrite):
        # every writer numbers its rows from 0
        self.base_sequences = {} if self.unaware else base_sequences
        self.sequence_offset = 0 if self.unaware else sequence_offset
        self.buffer_bytes = buffer_bytes or write_buffer_bytes(schema.options)
        self.rows = 0
        self.partition_fields = tuple(table.partition_keys_fields)
        self.partitions: set[Partition] = set()
        self._next: dict[BucketKey, int] = {}
        self._first: dict[BucketKey, int] = {}
        self._files: dict[BucketKey, list[DataFileMeta]] = {}
        self._values: list[pa.RecordBatch] = []
        self._kinds: list[np.ndarray] = []
        self._buckets: list[np.ndarray] = []
        self._buffered = 0

    def write(self, batch: pa.RecordBatch) -> None:
        """Take one input batch; flush level-0 files whenever the buffer is full."""
        if batch.num_rows == 0:
            return
        values = to_table_types(batch, self.layout)
        kinds = parse_row_kinds(batch, self.layout.row_kind_column)
        self.write_rows(values, kinds, self._buckets_of(batch, values))

    def write_rows(self, values: pa.RecordBatch, kinds: np.ndarray, buckets: np.ndarray) -> None:
        """Take rows already in the table's types, with their row kinds and buckets."""
        self.rows += values.num_rows
        if self.kind_filter.active:
            keep = self.kind_filter.keep(kinds)
            values, kinds, buckets = values.filter(pa.array(keep)), kinds[keep], buckets[keep]
        if self.append:
            check_append_kinds(kinds)
        self._note_partitions(values)
        self._values.append(values)
        self._kinds.append(kinds)
        self._buckets.append(buckets)
        self._buffered += values.nbytes
        if self._buffered >= self.buffer_bytes:
            self.flush()

    def _buckets_of(self, batch: pa.RecordBatch, values: pa.RecordBatch) -> np.ndarray:
        """Buckets carried by a distributed input (checked), else hashed here."""
        if not self.layout.prepared and self.dynamic:
            if self.assigner is None:
                raise UnsupportedLayoutError(
                    "a dynamic-bucket table needs one assigner per key: ingest through "
                    "dagster_paimon.spark.ingest (or ingest_arrow), not a bare DataFrame write"
                )
            return self.assigner.assign_rows(values)
        if not self.layout.prepared and self.unaware:
            return np.zeros(values.num_rows, dtype=np.int32)
        if not self.layout.prepared:
            return assign_buckets(self.table.table_schema, values, self.num_buckets)
        column = batch.column(BUCKET_COLUMN)
        buckets = np.asarray(pc.fill_null(column, -1)).astype(np.int32)
        top = 1 if self.unaware else self.num_buckets if self.num_buckets > 0 else MAX_BUCKET_IDS
        if buckets.size and (buckets.min() < 0 or buckets.max() >= top):
            raise InvalidArgumentError(
                f"{BUCKET_COLUMN!r} holds buckets outside 0..{top - 1}; it must "
                "come from dagster_paimon.spark.ingest.distribute"
            )
        return buckets

    def _note_partitions(self, values: pa.RecordBatch) -> None:
        """Remember the partitions rows are written to: overwrite replaces exactly these."""
        if values.num_rows == 0:
            return
        if not self.partition_keys:
            self.partitions.add(Partition((), ()))
            return
        distinct = pa.table({k: values.column(k) for k in self.partition_keys}).group_by(
            self.partition_keys
        )
        for row in distinct.aggregate([]).to_pylist():
            self.partitions.add(self._partition(row))

    def _partition(self, row: dict) -> Partition:
        """The partition of a row given as a dict of its partition columns."""
        return Partition(tuple(row[k] for k in self.partition_keys), self.partition_fields)

    def flush(self) -> None:
        """Write the buffered rows of every bucket as level-0 files."""
        if not self._values:
            return
        values = pa.Table.from_batches(self._values)
        kinds = np.concatenate(self._kinds)
        buckets = np.concatenate(self._buckets)
        self._values, self._kinds, self._buckets, self._buffered = [], [], [], 0
        if values.num_rows == 0:
            return
        groups = 0
        for partition, bucket, rows, group_kinds in self._groups(values, kinds, buckets):
            self._write_bucket(partition, bucket, rows, group_kinds)
            groups += 1
        log.info("flushed %d rows of %d buckets into level 0", values.num_rows, groups)

    def _groups(
        self, values: pa.Table, kinds: np.ndarray, buckets: np.ndarray
    ) -> Iterator[tuple[Partition, int, pa.Table, np.ndarray]]:
        """Rows of each (partition, bucket), in input order (the grouping sort is stable)."""
        names = [*self.partition_keys, BUCKET_COLUMN]
        grouping = pa.table(
            {**{k: values.column(k) for k in self.partition_keys}, BUCKET_COLUMN: buckets}
        )
        if not sorted_by(grouping, names):
            order = pc.sort_indices(grouping, sort_keys=[(n, "ascending") for n in names])
            grouping, values = grouping.take(order), values.take(order)
            kinds = kinds[np.asarray(order)]
        bounds = _boundaries(grouping, names)
        for start, end in pairwise(bounds):
            first = grouping.slice(start, 1).to_pylist()[0]
            partition = self._partition(first)
            yield (
                partition,
                int(first[BUCKET_COLUMN]),
                values.slice(start, end - start),
                kinds[start:end],
            )

    def _sequences(self, key: BucketKey, rows: int) -> np.ndarray:
        """The next `rows` sequence numbers of a bucket, continuing its maximum."""
        start = self._next.get(key)
        if start is None:
            start = self.base_sequences.get(key, -1) + 1 + self.sequence_offset
            self._first[key] = start
        if self.sequence_offset and start + rows - self._first[key] > SEQUENCE_STRIDE:
            raise InvalidArgumentError(
                "one Spark partition holds more than 2^32 rows of a single bucket; repartition "
                "the DataFrame (or ingest through dagster_paimon.spark.ingest)"
            )
        self._next[key] = start + rows
        return np.arange(start, start + rows, dtype=np.int64)

    def _write_bucket(
        self, partition: Partition, bucket: int, values: pa.Table, kinds: np.ndarray
    ) -> None:
        """Number, sort, fold and write one bucket's share of the buffer (an append table's
        rows stay as they come, in input order)."""
        key = (partition, bucket)
        if self.dynamic:
            hashes = key_hashes(self.table.table_schema, values)
            self._hashes.setdefault(key, []).append(np.unique(hashes))
        sequences = self._sequences(key, values.num_rows)
        columns = [values.column(k) for k in self.trimmed_keys]
        columns += [pa.array(sequences), pa.array(kinds, pa.int8()), *values.columns]
        kv = pa.Table.from_arrays(columns, schema=self.kv)
        if self.append:
            writer = RollingWriter(self.table, partition, bucket, 0, APPEND_FILE_SOURCE)
            files = write_all(writer, kv.to_batches(max_chunksize=RUN_BATCH_ROWS))
            self._files.setdefault(key, []).extend(files)
            return
        if not sorted_by(kv, self.keys):
            order = [(k, "ascending") for k in self.keys] + [(SEQUENCE_NUMBER, "ascending")]
            kv = kv.take(pc.sort_indices(kv, sort_keys=order))
        writer = RollingWriter(self.table, partition, bucket, 0, APPEND_FILE_SOURCE)
        files = write_all(
            writer,
            merge_sorted_runs(
                [kv.to_batches(max_chunksize=RUN_BATCH_ROWS)],
                self.engine,
                drop_delete=False,
                key_columns=self.keys,
            ),
        )
        self._files.setdefault(key, []).extend(files)

    def finish(self) -> list[BucketWrite]:
        """Flush what is left; the files of every bucket written, with their sequence range
        (and, for dynamic buckets, the bucket's new HASH index when keys were added)."""
        self.flush()
        writes = []
        for key, files in self._files.items():
            if not files:
                continue
            write = BucketWrite(key[0], key[1], tuple(files), self._first[key])
            if self.dynamic:
                write = self._with_index(write)
            writes.append(write)
        return writes

    def _with_index(self, write: BucketWrite) -> BucketWrite:
        """The write with its bucket's HASH index rewritten if it added key hashes."""
        key = (write.partition, write.bucket)
        base = self.hash_indexes.get(key)
        old = (
            read_hashes(self.table, write.partition, write.bucket, base)
            if base is not None
            else np.zeros(0, dtype=np.int32)
        )
        merged = np.union1d(old, np.concatenate(self._hashes[key]))
        if len(merged) == len(np.unique(old)):
            return write
        index = write_hashes(self.table, write.partition, write.bucket, merged)
        write = replace(write, index=index, base_index=base.file_name if base else None)
        self._indexes.append(write)
        return write

    def abort(self) -> None:
        """Delete every file this writer produced: a failed task leaves nothing behind."""
        for (partition, bucket), files in self._files.items():
            delete_data_files(self.table, partition, bucket, files)
        for write in self._indexes:
            assert write.index is not None
            delete_index_file(self.table, write.partition, write.bucket, write.index)
        self._files.clear()
        self._indexes.clear()
