"""Reading a sorted run: its files streamed in bounded batches, in the table's current KV schema."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from dagster_paimon.errors import CorruptFileError, SchemaMismatchError
from dagster_paimon.format.manifest import DataFileMeta
from dagster_paimon.format.schema import TableSchema
from dagster_paimon.format.table import FileStoreTable
from dagster_paimon.io.bulk import BULK_ERRORS, bulk_readable, read_bulk
from dagster_paimon.io.formats import PARQUET, format_of, open_reader
from dagster_paimon.io.kv import (
    DELETE,
    KEY_PREFIX,
    LEVEL,
    POSITION,
    UPDATE_BEFORE,
    VALUE_KIND,
    kv_schema,
)
from dagster_paimon.io.paths import data_file_path
from dagster_paimon.partition import Partition
from dagster_paimon.storage.local import input_stream, local_path

READ_BUFFER_ROWS = 1 << 17
MIN_RUN_BATCH_ROWS = 1024


def coalesced(batches: Iterable[pa.RecordBatch], rows: int) -> Iterator[pa.RecordBatch]:
    """The batches' rows, in order, regrouped into batches of at least `rows` (the last one
    less): many small files written as few large row groups, with less work per batch."""
    pending: list[pa.RecordBatch] = []
    held = 0
    for batch in batches:
        pending.append(batch)
        held += batch.num_rows
        if held >= rows:
            yield from pa.Table.from_batches(pending).combine_chunks().to_batches()
            pending, held = [], 0
    if pending:
        yield from pa.Table.from_batches(pending).combine_chunks().to_batches()


def run_batch_rows(runs: int) -> int:
    """Rows per batch when `runs` runs are read at once: one shared buffer, split evenly."""
    return max(MIN_RUN_BATCH_ROWS, READ_BUFFER_ROWS // max(1, runs))


Sources = Mapping[str, str | None]


def file_sources(table: FileStoreTable, schema_id: int) -> Sources:
    """Per column of the current KV layout, the column holding it in files of `schema_id`.

    Fields are matched by id, as Paimon's readers do: a renamed column is read under its old
    name, a dropped one is not read, one added since (even under an old name) is absent (None).
    """
    current = table.table_schema
    if schema_id == current.id:
        return {}
    old: TableSchema | None = table.schema_manager.get_schema(schema_id)
    if old is None:
        raise SchemaMismatchError(f"schema {schema_id} of {table.identifier} is missing")
    names = {f.id: f.name for f in old.fields}
    sources: dict[str, str | None] = {}
    for f in current.fields:
        before = names.get(f.id)
        sources[f.name] = before
        sources[KEY_PREFIX + f.name] = None if before is None else KEY_PREFIX + before
    return sources


def _source(name: str, present: Sequence[str], sources: Sources) -> str | None:
    """The file column a target column is read from, or None when the file cannot hold it.

    A thin-mode file (data-file.thin-mode) has no _KEY_ columns: Paimon's readers take each
    key from its value column.
    """
    source = sources.get(name, name)
    if source is None:
        return None
    if source not in present and source.startswith(KEY_PREFIX):
        value = source[len(KEY_PREFIX) :]
        if value in present:
            return value
    return source if source in present else None


def _file_columns(target: pa.Schema, present: Sequence[str], sources: Sources) -> list[str]:
    """The file's columns a read of `target` needs, each once."""
    found = (_source(f.name, present, sources) for f in target)
    return list(dict.fromkeys(c for c in found if c is not None))


def _aligned(batch: pa.RecordBatch, target: pa.Schema, sources: Sources) -> pa.RecordBatch:
    """A file's batch in the table's current KV schema: columns found by field id (thin-mode
    keys from their values), missing ones as nulls, types cast (widened)."""
    if not sources and batch.schema.equals(target):
        return batch
    columns = []
    names = batch.schema.names
    for f in target:
        source = _source(f.name, names, sources)
        if source is not None:
            columns.append(batch.column(source).cast(f.type))
        elif f.nullable:
            columns.append(pa.nulls(batch.num_rows, f.type))
        else:
            raise SchemaMismatchError(f"data file lacks required column {f.name!r}")
    return pa.RecordBatch.from_arrays(columns, schema=target)


def _deleted_mask(deleted: np.ndarray, start: int, rows: int) -> np.ndarray:
    """Which of the rows [start, start + rows) a sorted array of deleted positions names."""
    mask = np.zeros(rows, dtype=bool)
    low, high = np.searchsorted(deleted, [start, start + rows])
    mask[deleted[low:high] - start] = True
    return mask


@dataclass(frozen=True)
class RowFilter:
    """Rows a reader keeps, judged on some columns (record-level expiry)."""

    columns: tuple[str, ...]
    keep: Callable[[pa.RecordBatch], np.ndarray]


def _without_skipped(
    batch: pa.RecordBatch, start: int, deleted: np.ndarray | None, row_filter: RowFilter | None
) -> pa.RecordBatch:
    """The batch (rows from `start` of its file) without the rows a deletion vector marks or
    the filter rejects."""
    drop = np.zeros(batch.num_rows, dtype=bool)
    if deleted is not None and len(deleted):
        drop |= _deleted_mask(deleted, start, batch.num_rows)
    if row_filter is not None:
        drop |= ~row_filter.keep(batch)
    return batch.filter(pa.array(~drop)) if drop.any() else batch


@contextmanager
def _decoding(path: str) -> Iterator[None]:
    """A data file Arrow cannot decode (truncated, overwritten) is a corrupt file, not a bug."""
    try:
        yield
    except (pa.ArrowInvalid, EOFError) as e:
        raise CorruptFileError(f"data file {path} cannot be decoded: {e}") from e


def read_file(
    table: FileStoreTable,
    partition: Partition,
    bucket: int,
    meta: DataFileMeta,
    batch_rows: int,
    *,
    columns: Sequence[str] | None = None,
    deleted: np.ndarray | None = None,
    position: bool = False,
    row_filter: RowFilter | None = None,
) -> Iterator[pa.RecordBatch]:
    """One data file in bounded batches, in the current KV schema (or `columns` of it).

    Rows at the sorted positions `deleted` (a deletion vector) are skipped, and rows
    `row_filter` rejects; `position` adds each row's position in the file as _POSITION.
    """
    sources = file_sources(table, meta.schema_id)
    full = kv_schema(table.table_schema)
    wanted = list(full.names if columns is None else columns)
    extra = [c for c in (row_filter.columns if row_filter else ()) if c not in wanted]
    names = (*wanted, *extra)
    target = full if names == tuple(full.names) else pa.schema([full.field(c) for c in names])
    skips = (deleted is not None and len(deleted) > 0) or row_filter is not None
    path = data_file_path(table, partition, bucket, meta)
    start = 0
    with input_stream(table.file_io, path) as stream, _decoding(path):
        reader = open_reader(stream, meta.file_name)
        present = _file_columns(target, reader.names, sources)
        for batch in reader.batches(batch_rows, present):
            rows = batch.num_rows
            batch = _aligned(batch, target, sources)
            if position:
                positions = pa.array(np.arange(start, start + rows, dtype=np.int64))
                batch = batch.append_column(POSITION, positions)
            if skips:
                batch = _without_skipped(batch, start, deleted, row_filter)
            if extra:
                batch = batch.drop_columns(extra)
            start += rows
            yield batch


def read_run(
    table: FileStoreTable,
    partition: Partition,
    bucket: int,
    files: Iterable[DataFileMeta],
    batch_rows: int,
    *,
    deleted: Mapping[str, np.ndarray] | None = None,
    with_level: bool = False,
    row_filter: RowFilter | None = None,
) -> Iterator[pa.RecordBatch]:
    """Stream a sorted run file after file in bounded batches, in the current KV schema.

    `deleted` maps file names to their deletion vectors' positions, whose rows are skipped,
    as are rows `row_filter` rejects; `with_level` adds each file's level as _LEVEL.
    """
    for meta in files:
        vector = (deleted or {}).get(meta.file_name)
        for batch in read_file(
            table, partition, bucket, meta, batch_rows, deleted=vector, row_filter=row_filter
        ):
            if with_level:
                levels = pa.array(np.full(batch.num_rows, meta.level, dtype=np.int32))
                batch = batch.append_column(LEVEL, levels)
            yield batch


def _bulk_path(
    table: FileStoreTable,
    partition: Partition,
    bucket: int,
    meta: DataFileMeta,
    batch_rows: int,
    deleted: Mapping[str, np.ndarray],
) -> str | None:
    """The local path of a file read_bulk may read with others: small parquet of the current
    schema, no row of which a deletion vector marks; None for any other file."""
    if (
        meta.row_count > batch_rows
        or meta.schema_id != table.table_schema.id
        or format_of(meta.file_name) != PARQUET
        or len(deleted.get(meta.file_name, ())) > 0
    ):
        return None
    return local_path(data_file_path(table, partition, bucket, meta))


def read_files(
    table: FileStoreTable,
    partition: Partition,
    bucket: int,
    files: Sequence[DataFileMeta],
    batch_rows: int,
    *,
    columns: Sequence[str],
    deleted: Mapping[str, np.ndarray],
) -> Iterator[pa.RecordBatch]:
    """Files one after another, in the current schema's `columns`, without the rows their
    deletion vectors (`deleted`, by file name) mark.

    Consecutive small local parquet files of the current schema are read in one call per
    batch_rows rows (io/bulk: a quarter less work on files of a few thousand rows); the
    others file by file.
    """
    full = kv_schema(table.table_schema)
    target = pa.schema([full.field(c) for c in columns])
    bulk = bulk_readable(target)
    group: list[tuple[DataFileMeta, str]] = []

    def one_by_one(metas: Iterable[DataFileMeta]) -> Iterator[pa.RecordBatch]:
        for meta in metas:
            yield from read_file(
                table,
                partition,
                bucket,
                meta,
                batch_rows,
                columns=columns,
                deleted=deleted.get(meta.file_name),
            )

    def flush() -> Iterator[pa.RecordBatch]:
        if not group:
            return
        metas = [m for m, _ in group]
        try:
            rows = read_bulk([p for _, p in group], target)
        except BULK_ERRORS:  # read alone, the file polars could not read is named
            yield from one_by_one(metas)
        else:
            yield from rows.combine_chunks().to_batches()
        group.clear()

    held = 0
    for meta in files:
        path = _bulk_path(table, partition, bucket, meta, batch_rows, deleted) if bulk else None
        if path is None:
            yield from flush()
            held = 0
            yield from one_by_one([meta])
            continue
        group.append((meta, path))
        held += meta.row_count
        if held >= batch_rows:
            yield from flush()
            held = 0
    yield from flush()


class FileRows:
    """One data file opened for lookups: its live keys with positions, and records by position.

    Keys are read once; records are read row group by row group as positions ask for them,
    and groups before the lowest position asked for are let go (lookups ascend).
    """

    def __init__(
        self,
        table: FileStoreTable,
        partition: Partition,
        bucket: int,
        meta: DataFileMeta,
        key_columns: Sequence[str],
        deleted: np.ndarray | None,
        row_filter: RowFilter | None = None,
    ):
        self.table, self.partition, self.bucket, self.meta = table, partition, bucket, meta
        self.key_columns = list(key_columns)
        self.deleted = deleted
        self.row_filter = row_filter
        self._keys: pa.Table | None = None
        self._groups: dict[int, pa.Table] = {}
        self._group_rows: list[int] | None = None

    def keys(self) -> pa.Table:
        """Key columns and _POSITION of every row no deletion vector marks, in key order."""
        if self._keys is None:
            batches = list(
                read_file(
                    self.table,
                    self.partition,
                    self.bucket,
                    self.meta,
                    READ_BUFFER_ROWS,
                    columns=self.key_columns,
                    deleted=self.deleted,
                    position=True,
                    row_filter=self.row_filter,
                )
            )
            if batches:
                self._keys = pa.Table.from_batches(batches).combine_chunks()
            else:
                kv = kv_schema(self.table.table_schema)
                fields = [kv.field(c) for c in self.key_columns]
                self._keys = pa.schema([*fields, pa.field(POSITION, pa.int64())]).empty_table()
        return self._keys

    def rows(self, positions: np.ndarray) -> pa.Table:
        """The KV records at ascending positions of the file, in the current KV schema."""
        target = kv_schema(self.table.table_schema)
        path = data_file_path(self.table, self.partition, self.bucket, self.meta)
        with self.table.file_io.new_input_stream(path) as stream:
            reader = open_reader(stream, self.meta.file_name)
            if self._group_rows is None:
                self._group_rows = reader.group_rows()
            counts = self._group_rows
            starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
            groups = np.searchsorted(starts, positions, side="right") - 1
            needed = np.unique(groups)
            for stale in [g for g in self._groups if g < needed[0]]:
                del self._groups[stale]
            sources = file_sources(self.table, self.meta.schema_id)
            present = _file_columns(target, reader.names, sources)
            for group in needed:
                if int(group) not in self._groups:
                    read = reader.read_group(int(group), present)
                    batches = [_aligned(b, target, sources) for b in read.to_batches()]
                    self._groups[int(group)] = pa.Table.from_batches(batches, schema=target)
        offsets = np.zeros(len(needed), dtype=np.int64)
        offsets[1:] = np.cumsum([self._groups[int(g)].num_rows for g in needed])[:-1]
        local = positions - starts[groups] + offsets[np.searchsorted(needed, groups)]
        loaded = pa.concat_tables([self._groups[int(g)] for g in needed])
        return loaded.take(pa.array(local))


def count_retracts(
    table: FileStoreTable, partition: Partition, bucket: int, meta: DataFileMeta
) -> int:
    """-U and -D rows a file really holds, read from its _VALUE_KIND column alone."""
    count = 0
    for batch in read_file(table, partition, bucket, meta, READ_BUFFER_ROWS, columns=[VALUE_KIND]):
        kinds = np.asarray(batch.column(0))
        count += int(np.count_nonzero((kinds == UPDATE_BEFORE) | (kinds == DELETE)))
    return count
