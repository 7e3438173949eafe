"""The rolling writer: key-sorted KV batches into data files of about target-file-size."""

from __future__ import annotations

import logging
import math
import queue
import threading
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol, TypeVar

import pyarrow as pa
import pyarrow.compute as pc
from pypaimon.data.timestamp import Timestamp
from pypaimon.manifest.schema.data_file_meta import DataFileMeta
from pypaimon.manifest.schema.simple_stats import SimpleStats
from pypaimon.table.file_store_table import FileStoreTable
from pypaimon.table.row.generic_row import GenericRow
from pypaimon.write.writer.parquet_writer_options import create_parquet_writer_options

from dagster_paimon.failpoints import DATA_FILE_WRITTEN, failpoint
from dagster_paimon.io.external import DataFilePaths
from dagster_paimon.io.formats import FileWriter, check_writable_format, open_writer
from dagster_paimon.io.kv import RETRACT_KINDS, SEQUENCE_NUMBER, VALUE_KIND, key_columns, kv_schema
from dagster_paimon.options import (
    CHANGELOG_FILE_PREFIX,
    DATA_FILE_THIN_MODE,
    file_format,
    flag,
)
from dagster_paimon.partition import Partition

log = logging.getLogger(__name__)

APPEND_FILE_SOURCE = 0
COMPACT_FILE_SOURCE = 1


T = TypeVar("T", covariant=True)


class BatchWriter(Protocol[T]):
    """A writer of Arrow batches that can finish or remove everything it wrote."""

    def write(self, batch: pa.RecordBatch) -> None:
        """Take one batch."""
        ...

    def finish(self) -> T:
        """Close and describe what was written."""
        ...

    def abort(self) -> None:
        """Delete everything written so far."""
        ...


PIPELINE_DEPTH = 2


def write_all(writer: BatchWriter[T], batches: Iterable[pa.RecordBatch]) -> T:
    """Write every batch and finish; on any failure the writer removes what it wrote.

    Producing the batches (reading, merging) overlaps with encoding and compressing them: one
    writer thread takes them through a queue at most PIPELINE_DEPTH batches deep (Arrow
    releases the GIL on both sides).
    """
    pending: queue.Queue[pa.RecordBatch | None] = queue.Queue(maxsize=PIPELINE_DEPTH)
    failure: list[BaseException] = []

    def consume() -> None:
        while (batch := pending.get()) is not None:
            if failure:
                continue
            try:
                writer.write(batch)
            except BaseException as e:  # re-raised by the producing thread
                failure.append(e)

    thread = threading.Thread(target=consume, name="data-file-writer", daemon=True)
    thread.start()
    try:
        for batch in batches:
            if failure:
                break
            pending.put(batch)
    except BaseException:
        pending.put(None)
        thread.join()
        writer.abort()
        raise
    pending.put(None)
    thread.join()
    try:
        if failure:
            raise failure[0]
        return writer.finish()
    except BaseException:
        writer.abort()
        raise


class _Stats:
    """Running min/max/null counts of some columns, combined batch by batch."""

    def __init__(self, names: list[str], schema: pa.Schema):
        self.names = names
        self.comparable = {n: _has_order(schema.field(n).type) for n in names}
        self.mins: dict[str, object] = dict.fromkeys(names)
        self.maxs: dict[str, object] = dict.fromkeys(names)
        self.nulls: dict[str, int] = dict.fromkeys(names, 0)

    def update(self, batch: pa.RecordBatch) -> None:
        """Fold one batch into the running statistics."""
        for n in self.names:
            column = batch.column(n)
            self.nulls[n] += column.null_count
            if not self.comparable[n] or column.null_count == len(column):
                continue
            bounds = pc.min_max(column)
            low, high = bounds["min"].as_py(), bounds["max"].as_py()
            if self.mins[n] is None or low < self.mins[n]:
                self.mins[n] = low
            if self.maxs[n] is None or high > self.maxs[n]:
                self.maxs[n] = high

    def simple_stats(self, fields: list) -> SimpleStats:
        """As pypaimon's writer records them: GenericRows over Paimon fields, column by column."""
        return SimpleStats(
            GenericRow([self.mins[n] for n in self.names], fields),
            GenericRow([self.maxs[n] for n in self.names], fields),
            [self.nulls[n] for n in self.names],
        )


def _has_order(arrow_type: pa.DataType) -> bool:
    """Types pypaimon records min/max for: not nested, not large binary."""
    return not (pa.types.is_nested(arrow_type) or pa.types.is_large_binary(arrow_type))


@dataclass
class _OpenFile:
    """The output file being written and what its DataFileMeta will need."""

    name: str
    path: str
    stream: object
    writer: FileWriter
    key_stats: _Stats
    value_stats: _Stats | None
    rows: int = 0
    deletes: int = 0
    min_seq: int | None = None
    max_seq: int | None = None
    min_key: list | None = None
    max_key: list | None = None


class RollingWriter:
    """Writes key-sorted KV batches into parquet files of about target-file-size at one level.

    Compaction writes at its output level with file source COMPACT; ingest writes level 0 with
    file source APPEND; a changelog (`changelog`) is named changelog-* with file source APPEND.
    """

    def __init__(
        self,
        table: FileStoreTable,
        partition: Partition,
        bucket: int,
        level: int,
        file_source: int = COMPACT_FILE_SOURCE,
        *,
        changelog: bool = False,
    ):
        schema = table.table_schema
        check_writable_format(schema)
        self.format = file_format(schema.options)
        self.table = table
        self.partition = partition
        self.bucket = bucket
        self.level = level
        self.file_source = file_source
        self.schema = kv_schema(schema)
        self.keys = key_columns(schema)
        # thin mode (data-file.thin-mode): keys are not stored twice; readers take the values
        self.thin = flag(schema.options, DATA_FILE_THIN_MODE)
        self.file_schema = (
            pa.schema([f for f in self.schema if f.name not in self.keys])
            if self.thin
            else self.schema
        )
        self.key_fields = list(table.trimmed_primary_keys_fields)
        self.stats_fields = list(table.fields) if table.options.metadata_stats_enabled() else []
        self.target_size = table.options.target_file_size(True)
        self.compression = table.options.file_compression("zstd")
        self.zstd_level = table.options.file_compression_zstd_level(1)
        self.parquet_options = create_parquet_writer_options(table.options)
        prefix = (
            schema.options.get(CHANGELOG_FILE_PREFIX, "changelog-")
            if changelog
            else table.options.data_file_prefix("data-")
        )
        self.prefix = f"{prefix}{uuid.uuid4()}-"
        self.written: list[DataFileMeta] = []
        self._current: _OpenFile | None = None
        self._pending_paths: list[str] = []
        self._paths = DataFilePaths(table, partition, bucket)  # checks external-path options

    def _open(self) -> _OpenFile:
        """Start the next file of this writer."""
        name = f"{self.prefix}{len(self.written)}.{self.format}"
        path = self._paths.new_path(name)  # the bucket directory or an external root
        self._pending_paths.append(path)
        stream = self.table.file_io.new_output_stream(path)
        options = dict(self.parquet_options)
        if str(self.compression).lower() == "zstd":
            options["compression_level"] = self.zstd_level
        writer = open_writer(stream, self.file_schema, self.format, self.compression, options)
        value_names = [f.name for f in self.stats_fields]
        return _OpenFile(
            name,
            path,
            stream,
            writer,
            _Stats(self.keys, self.schema),
            _Stats(value_names, self.schema) if value_names else None,
        )

    def write(self, batch: pa.RecordBatch) -> None:
        """Append rows (sorted by key, continuing the previous batch), rolling at the target size.

        A batch is written in slices sized from the bytes per row seen so far, so a file closes
        near target-file-size even when one batch would overshoot it.
        """
        offset = 0
        while offset < batch.num_rows:
            if self._current is None:
                self._current = self._open()
            rows = self._rows_until_full(self._current, batch)
            self._append(self._current, batch.slice(offset, rows))
            offset += rows
            if self._current.stream.tell() >= self.target_size:
                self._close_current()

    def _rows_until_full(self, f: _OpenFile, batch: pa.RecordBatch) -> int:
        """Rows expected to fill the open file: compressed bytes/row once known, else raw size."""
        written = f.stream.tell()
        if f.rows:
            per_row = max(written / f.rows, 1e-3)
        else:
            per_row = max(batch.nbytes / max(batch.num_rows, 1), 1e-3)
        return max(1, math.ceil((self.target_size - written) / per_row))

    def _append(self, f: _OpenFile, batch: pa.RecordBatch) -> None:
        """Write one slice as a row group and fold it into the file's metadata."""
        f.writer.write_batch(batch.drop_columns(self.keys) if self.thin else batch)
        f.rows += batch.num_rows
        retracts = pc.is_in(batch.column(VALUE_KIND), pa.array(RETRACT_KINDS, pa.int8()))
        f.deletes += pc.sum(retracts).as_py() or 0
        seq = pc.min_max(batch.column(SEQUENCE_NUMBER))
        low, high = seq["min"].as_py(), seq["max"].as_py()
        f.min_seq = low if f.min_seq is None else min(f.min_seq, low)
        f.max_seq = high if f.max_seq is None else max(f.max_seq, high)
        if f.min_key is None:
            f.min_key = [batch.column(k)[0].as_py() for k in self.keys]
        f.max_key = [batch.column(k)[batch.num_rows - 1].as_py() for k in self.keys]
        f.key_stats.update(batch)
        if f.value_stats is not None:
            f.value_stats.update(batch)

    def _close_current(self) -> None:
        """Finish the open file and record its metadata."""
        f = self._current
        if f is None:
            return
        self._current = None
        f.writer.close()
        f.stream.close()
        failpoint(DATA_FILE_WRITTEN)
        self.written.append(
            DataFileMeta.create(
                file_name=f.name,
                file_size=self.table.file_io.get_file_size(f.path),
                row_count=f.rows,
                min_key=GenericRow(f.min_key, self.key_fields),
                max_key=GenericRow(f.max_key, self.key_fields),
                key_stats=f.key_stats.simple_stats(self.key_fields),
                value_stats=(
                    f.value_stats.simple_stats(self.stats_fields)
                    if f.value_stats is not None
                    else SimpleStats.empty_stats()
                ),
                min_sequence_number=f.min_seq,
                max_sequence_number=f.max_seq,
                schema_id=self.table.table_schema.id,
                level=self.level,
                extra_files=[],
                creation_time=Timestamp.now(),
                delete_row_count=f.deletes,
                file_source=self.file_source,
                value_stats_cols=None if self.stats_fields else [],
                external_path=self._paths.external_path(f.path),
                file_path=f.path,
            )
        )

    def finish(self) -> list[DataFileMeta]:
        """Close the last file; the metadata of every file written, in key order."""
        self._close_current()
        return list(self.written)

    def abort(self) -> None:
        """Delete every file this writer started: a failed task leaves nothing behind."""
        if self._current is not None:
            try:
                self._current.writer.close()
                self._current.stream.close()
            except Exception:
                log.debug("closing an aborted output file failed", exc_info=True)
            self._current = None
        for path in self._pending_paths:
            self.table.file_io.delete_quietly(path)
