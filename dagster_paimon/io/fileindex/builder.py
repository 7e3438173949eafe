"""The index blob of one data file, fed the file's rows batch by batch (DataFileIndexWriter).

Every row the file holds is indexed in file order, deletes included, over the value columns
(the table's own columns; a primary-key file's _KEY_ and system columns are not indexed); a map
key's index takes the records mapentry derives from its map column.
A blob larger than the in-manifest threshold goes beside the data file as `<file>.index`;
smaller ones are embedded in the file's manifest entry.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import pyarrow as pa

from dagster_paimon.errors import InternalError
from dagster_paimon.io.fileindex import bitmap, bloom, bsi, rangebitmap
from dagster_paimon.io.fileindex.format import serialize
from dagster_paimon.io.fileindex.mapentry import entry_values
from dagster_paimon.io.fileindex.options import FileIndexPlan, IndexSpec
from dagster_paimon.options import memory_bytes

INDEX_SUFFIX = ".index"


class IndexWriter(Protocol):
    """One index of one column."""

    def write(self, column: pa.Array) -> None:
        """Take the column's next rows."""
        ...

    def serialized(self) -> bytes:
        """The index of every row taken."""
        ...


@dataclass(frozen=True)
class FileIndexResult:
    """The index blob: embedded in the manifest, or the bytes of the `.index` sidecar."""

    embedded: bytes | None
    sidecar: bytes | None


def _writer(spec: IndexSpec) -> IndexWriter:
    """The writer of one index with its options, as the type's FileIndexerFactory makes it."""
    if spec.index_type == bloom.BLOOM_FILTER:
        return bloom.BloomFilterWriter(
            spec.jtype,
            int(spec.options.get("items", bloom.DEFAULT_ITEMS)),
            float(spec.options.get("fpp", bloom.DEFAULT_FPP)),
        )
    if spec.index_type == bitmap.BITMAP:
        block = spec.options.get("index-block-size")
        return bitmap.BitmapWriter(
            spec.jtype,
            int(spec.options.get("version", bitmap.DEFAULT_VERSION)),
            memory_bytes(block) if block is not None else bitmap.DEFAULT_BLOCK_SIZE,
        )
    if spec.index_type == bsi.BSI:
        return bsi.BsiWriter(spec.jtype)
    if spec.index_type == rangebitmap.RANGE_BITMAP:
        chunk = spec.options.get(rangebitmap.CHUNK_SIZE)
        return rangebitmap.RangeBitmapWriter(
            spec.jtype, memory_bytes(chunk) if chunk is not None else None
        )
    raise InternalError(f"file index type {spec.index_type!r} is not implemented")


class FileIndexBuilder:
    """The indexes of one data file being written."""

    def __init__(self, plan: FileIndexPlan):
        self.plan = plan
        self.writers = [(spec, _writer(spec)) for spec in plan.specs]

    def write(self, batch: pa.RecordBatch) -> None:
        """Index the file's next rows (a batch holding the value columns by name)."""
        for spec, writer in self.writers:
            column = batch.column(spec.column)
            writer.write(column if spec.map_key is None else entry_values(column, spec.map_key))

    def finish(self) -> FileIndexResult:
        """The blob, embedded when at most the threshold, else for a sidecar file."""
        blob = serialize([(s.name, s.index_type, w.serialized()) for s, w in self.writers])
        if len(blob) > self.plan.in_manifest_threshold:
            return FileIndexResult(None, blob)
        return FileIndexResult(blob, None)


def sidecar_path(data_file_path: str) -> str:
    """Where a data file's index goes: beside it, its name plus `.index`."""
    return data_file_path + INDEX_SUFFIX
