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

from dagster_paimon.failpoints import DATA_FILE_WRITTEN, failpoint
from dagster_paimon.format.manifest import DataFileMeta, GenericRow
from dagster_paimon.format.table import FileStoreTable, create_parquet_writer_options
from dagster_paimon.format.values import Timestamp
from dagster_paimon.io.external import DataFilePaths
from dagster_paimon.io.fileindex import FileIndexBuilder, file_index_plan, sidecar_path
from dagster_paimon.io.formats import FileWriter, check_writable_format, open_writer
from dagster_paimon.io.kv import (
    RETRACT_KINDS,
    SEQUENCE_NUMBER,
    VALUE_KIND,
    key_columns,
    kv_schema,
    value_schema,
    values_only,
)
from dagster_paimon.io.paths import file_extension
from dagster_paimon.io.stats import FileStats, StatsLayout
from dagster_paimon.options import (
    CHANGELOG_FILE_PREFIX,
    DATA_FILE_THIN_MODE,
    FILE_SUFFIX_INCLUDE_COMPRESSION,
    flag,
    write_compression,
    write_format,
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


class _OutputStream(Protocol):
    """What a writer needs of FileIO.new_output_stream's stream, beyond the format writer's."""

    def tell(self) -> int: ...

    def close(self) -> None: ...


@dataclass
class _OpenFile:
    """The output file being written and what its DataFileMeta will need."""

    name: str
    path: str
    stream: _OutputStream
    writer: FileWriter
    stats: FileStats
    rows: int = 0
    deletes: int = 0
    min_seq: int | None = None
    max_seq: int | None = None
    min_key: list | None = None
    max_key: list | None = None
    index: FileIndexBuilder | None = None


class RollingWriter:
    """Writes key-sorted KV batches into parquet files of about target-file-size at one level.

    Compaction writes at its output level with file source COMPACT; ingest writes level 0 with
    file source APPEND; a changelog (`changelog`) is named changelog-* with file source APPEND.
    An append table's files keep the table's columns alone (no key or system columns, no key
    statistics); with `first_sequence` its batches are plain rows numbered from that sequence
    on, as Java's RowDataRollingFileWriter numbers a compaction's output.
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
        first_sequence: int | None = None,
    ):
        schema = table.table_schema
        self.append = values_only(schema)
        self.next_sequence = first_sequence
        check_writable_format(schema)
        self.format = write_format(schema.options, level, changelog=changelog)
        self.table = table
        self.partition = partition
        self.bucket = bucket
        self.level = level
        self.file_source = file_source
        # an append table's files hold its columns alone (AppendOnlyWriter); ingest hands its
        # rows numbered (sequence and kind columns), compaction numbers them from first_sequence
        self.schema = value_schema(schema) if first_sequence is not None else kv_schema(schema)
        self.keys = [] if self.append else key_columns(schema)
        # thin mode (data-file.thin-mode): keys are not stored twice; readers take the values
        self.thin = flag(schema.options, DATA_FILE_THIN_MODE) and not self.append
        dropped = {SEQUENCE_NUMBER, VALUE_KIND} if self.append else set(self.keys)
        self.file_schema = (
            pa.schema([f for f in self.schema if f.name not in dropped])
            if self.thin or self.append
            else self.schema
        )
        self.key_fields = [] if self.append else list(table.trimmed_primary_keys_fields)
        self.stats = StatsLayout.of(
            schema,
            self.key_fields,
            level=level,
            file_format=self.format,
            changelog=changelog,
            thin=self.thin,
            append=self.append,
        )
        self.target_size = table.options.target_file_size(not self.append)
        self.compression = write_compression(
            schema.options, level, table.options.file_compression("zstd"), changelog=changelog
        )
        self.zstd_level = table.options.file_compression_zstd_level(1)
        self.extension = file_extension(
            self.format,
            self.compression,
            include_compression=flag(schema.options, FILE_SUFFIX_INCLUDE_COMPRESSION),
        )
        self.parquet_options = create_parquet_writer_options(table.options)
        prefix = (
            schema.options.get(CHANGELOG_FILE_PREFIX, "changelog-")
            if changelog
            else table.options.data_file_prefix("data-")
        )
        self.prefix = f"{prefix}{uuid.uuid4()}-"
        # Java indexes every data file but changelogs (KeyValueFileWriterFactory)
        self.file_index = None if changelog else file_index_plan(schema.options, schema.fields)
        self.written: list[DataFileMeta] = []
        self._current: _OpenFile | None = None
        self._pending_paths: list[str] = []
        self._paths = DataFilePaths(table, partition, bucket)  # checks external-path options

    def _open(self) -> _OpenFile:
        """Start the next file of this writer."""
        name = f"{self.prefix}{len(self.written)}{self.extension}"
        path = self._paths.new_path(name)  # the bucket directory or an external root
        self._pending_paths.append(path)
        stream = self.table.file_io.new_output_stream(path)
        options = dict(self.parquet_options)
        if str(self.compression).lower() == "zstd":
            options["compression_level"] = self.zstd_level
        writer = open_writer(stream, self.file_schema, self.format, self.compression, options)
        return _OpenFile(name, path, stream, writer, self.stats.collector(self.schema))

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
        if self.thin or self.append:
            f.writer.write_batch(batch.select(self.file_schema.names))
        else:
            f.writer.write_batch(batch)
        f.rows += batch.num_rows
        if self.next_sequence is not None:
            low = self.next_sequence
            self.next_sequence += batch.num_rows
            high = self.next_sequence - 1
        else:
            retracts = pc.is_in(batch.column(VALUE_KIND), pa.array(RETRACT_KINDS, pa.int8()))
            f.deletes += pc.sum(retracts).as_py() or 0
            seq = pc.min_max(batch.column(SEQUENCE_NUMBER))
            low, high = seq["min"].as_py(), seq["max"].as_py()
        f.min_seq = low if f.min_seq is None else min(f.min_seq, low)
        f.max_seq = high if f.max_seq is None else max(f.max_seq, high)
        if f.min_key is None:
            f.min_key = [batch.column(k)[0].as_py() for k in self.keys]
        f.max_key = [batch.column(k)[batch.num_rows - 1].as_py() for k in self.keys]
        f.stats.update(batch)
        if self.file_index is not None:
            f.index = f.index or FileIndexBuilder(self.file_index)
            f.index.write(batch)

    def _close_current(self) -> None:
        """Finish the open file and record its metadata."""
        f = self._current
        if f is None:
            return
        self._current = None
        f.writer.close()
        f.stream.close()
        failpoint(DATA_FILE_WRITTEN)
        embedded_index, extra_files = self._finish_index(f)
        value_stats, value_stats_cols = f.stats.value_stats()
        self.written.append(
            DataFileMeta.create(
                file_name=f.name,
                file_size=self.table.file_io.get_file_size(f.path),
                row_count=f.rows,
                min_key=GenericRow(f.min_key, self.key_fields),
                max_key=GenericRow(f.max_key, self.key_fields),
                key_stats=f.stats.key_stats(),
                value_stats=value_stats,
                min_sequence_number=f.min_seq,
                max_sequence_number=f.max_seq,
                schema_id=self.table.table_schema.id,
                level=self.level,
                extra_files=extra_files,
                creation_time=Timestamp.now(),
                delete_row_count=f.deletes,
                embedded_index=embedded_index,
                file_source=self.file_source,
                value_stats_cols=value_stats_cols,
                external_path=self._paths.external_path(f.path),
                file_path=f.path,
            )
        )

    def _finish_index(self, f: _OpenFile) -> tuple[bytes | None, list[str]]:
        """The file's index: embedded bytes, or a `.index` file beside it (an extra file)."""
        if f.index is None:
            return None, []
        result = f.index.finish()
        if result.sidecar is None:
            return result.embedded, []
        path = sidecar_path(f.path)
        self._pending_paths.append(path)
        with self.table.file_io.new_output_stream(path) as out:
            out.write(result.sidecar)
        return None, [path.rsplit("/", 1)[-1]]

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
