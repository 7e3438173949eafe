"""A bucket's deletion-vector index files and the snapshot's index manifest (Java's
BucketedDvMaintainer, DeletionVectorsIndexFile and IndexManifestFileHandler).

A bucket has at most one HASH index file (dynamic buckets, io/hashes.py). Its deletion vectors
may lie in several DELETION_VECTORS files: Java's unaware-bucket writers (Spark's DELETE through
AppendDeleteFileMaintainer, its compaction) add a file per change and roll them at
`deletion-vector.index-file.target-size`, keeping the files a change did not touch. Readers take
the union (each data file's vector lives in exactly one file, SnapshotReaderImpl). A bucketed
table's maintainer (BucketedDvMaintainer) restores the union and writes one file that replaces
all of them, as our rewrite does. A new index manifest drops the files a commit replaced, by
name, and adds the new ones (IndexManifestFileHandler's combiners).
"""

from __future__ import annotations

import uuid
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from dagster_paimon.errors import CorruptMetadataError
from dagster_paimon.failpoints import INDEX_FILE_WRITTEN, failpoint
from dagster_paimon.format.manifest import (
    DeletionVectorMeta,
    IndexFileMeta,
    IndexManifestEntry,
    TableManifests,
)
from dagster_paimon.format.metadata import Snapshot
from dagster_paimon.format.table import FileStoreTable, bucket_index_path, new_bucket_index_path
from dagster_paimon.io.filekind import ADD
from dagster_paimon.io.vectors import (
    DeletionVector,
    add_positions,
    deserialize,
    new_vector,
    serialize,
)
from dagster_paimon.options import DELETION_VECTORS_BITMAP64, flag
from dagster_paimon.partition import Partition

DELETION_VECTORS = "DELETION_VECTORS"
HASH_INDEX = "HASH"
BUCKET_INDEX_TYPES = (DELETION_VECTORS, HASH_INDEX)
INDEX_VERSION = 1

BucketKey = tuple[Partition, int]


def index_entries(table: FileStoreTable, snapshot: Snapshot | None) -> list[IndexManifestEntry]:
    """Every entry of a snapshot's index manifest (none without one)."""
    if snapshot is None or not snapshot.index_manifest:
        return []
    return TableManifests(table).index_entries(snapshot.index_manifest)


def bucket_indexes(
    table: FileStoreTable, snapshot: Snapshot | None, index_type: str
) -> dict[BucketKey, IndexFileMeta]:
    """The index file of one type of each bucket that has one: HASH, of which a bucket has at
    most one (BucketedCombiner); deletion vectors are deletion_indexes'."""
    found: dict[BucketKey, IndexFileMeta] = {}
    for e in index_entries(table, snapshot):
        if e.index_file.index_type == index_type:
            found[(Partition.of_row(e.partition), e.bucket)] = e.index_file
    return found


@dataclass(frozen=True)
class VectorIndex:
    """Every deletion-vector index file of one bucket (an unaware-bucket table: of one
    partition), read as one: the union of their vectors."""

    files: tuple[IndexFileMeta, ...]

    @property
    def names(self) -> tuple[str, ...]:
        """The index files' names, sorted: what a rewrite started from."""
        return tuple(sorted(f.file_name for f in self.files))

    @cached_property
    def ranges(self) -> dict[str, DeletionVectorMeta]:
        """Where each data file's vector lies, over every index file (read once).

        Raises CorruptMetadataError (a data file with a vector in two index files: Java's
        commit refuses to write that, and no reader could tell which one holds).
        """
        found: dict[str, DeletionVectorMeta] = {}
        for index in self.files:
            for name, meta in (index.dv_ranges or {}).items():
                if name in found:
                    raise CorruptMetadataError(
                        f"data file {name} has a deletion vector in two index files "
                        f"({', '.join(self.names)})"
                    )
                found[name] = meta
        return found

    @cached_property
    def holders(self) -> dict[str, str]:
        """The index file holding each data file's vector."""
        return {name: f.file_name for f in self.files for name in (f.dv_ranges or {})}

    def of(self, index_files: Collection[str]) -> VectorIndex:
        """Just the named index files of the bucket."""
        return VectorIndex(tuple(f for f in self.files if f.file_name in index_files))


def deletion_indexes(
    table: FileStoreTable, snapshot: Snapshot | None
) -> dict[BucketKey, VectorIndex]:
    """The deletion-vector index files of each bucket that has any."""
    found: dict[BucketKey, list[IndexFileMeta]] = {}
    for e in index_entries(table, snapshot):
        if e.index_file.index_type == DELETION_VECTORS:
            found.setdefault((Partition.of_row(e.partition), e.bucket), []).append(e.index_file)
    return {key: VectorIndex(tuple(files)) for key, files in found.items()}


def deleted_rows(index: VectorIndex | None) -> dict[str, int]:
    """Deleted row count per data file, from the index metadata alone (no file read)."""
    if index is None:
        return {}
    return {name: meta.cardinality or 0 for name, meta in index.ranges.items()}


def counted_rows(
    table: FileStoreTable, partition: Partition, bucket: int, index: VectorIndex | None
) -> dict[str, int]:
    """Deleted row count per data file: the index metadata's, or where it records none (Java
    0.9 and 1.0-SNAPSHOT wrote no cardinality) the vector's, read from its index file."""
    if index is None:
        return {}
    counts = deleted_rows(index)
    unknown = [
        f for f in index.files if any(m.cardinality is None for m in (f.dv_ranges or {}).values())
    ]
    for file in unknown:
        counts.update(
            (name, len(v)) for name, v in _read_file_vectors(table, partition, bucket, file).items()
        )
    return counts


def index_path(table: FileStoreTable, partition: Partition, bucket: int, index: IndexFileMeta):
    """Where an index file lives (index dir, or the bucket dir with index-file-in-data-file-dir)."""
    return bucket_index_path(table, partition.values, bucket, index)


def _read_file_vectors(
    table: FileStoreTable, partition: Partition, bucket: int, index: IndexFileMeta
) -> dict[str, DeletionVector]:
    """Every data file's deletion vector in one index file."""
    if not index.dv_ranges:
        return {}
    path = index_path(table, partition, bucket, index)
    with table.file_io.new_input_stream(path) as stream:
        data = stream.read()
    if not data or data[0] != INDEX_VERSION:
        raise CorruptMetadataError(f"deletion vector index {path} has an unknown version")
    try:
        return {
            name: deserialize(data[meta.offset :], meta.length)
            for name, meta in index.dv_ranges.items()
        }
    except CorruptMetadataError as e:
        raise CorruptMetadataError(f"deletion vector index {path}: {e}") from e


def read_vectors(
    table: FileStoreTable, partition: Partition, bucket: int, index: VectorIndex | None
) -> dict[str, DeletionVector]:
    """Every data file's deletion vector in a bucket's index files (their union).

    Raises CorruptMetadataError (an unreadable index file, a vector in two of them).
    """
    if index is None or not index.ranges:  # ranges: a vector in two files is corrupt
        return {}
    vectors: dict[str, DeletionVector] = {}
    for file in index.files:
        vectors.update(_read_file_vectors(table, partition, bucket, file))
    return vectors


class BucketVectors:
    """A bucket's deletion vectors while a compaction changes them (BucketedDvMaintainer)."""

    def __init__(self, vectors: Mapping[str, DeletionVector], *, bitmap64: bool):
        self.vectors = dict(vectors)
        self.bitmap64 = bitmap64
        self.modified = False

    @classmethod
    def restore(
        cls, table: FileStoreTable, partition: Partition, bucket: int, index: VectorIndex | None
    ) -> BucketVectors:
        """The vectors of a bucket's current index files (BucketedDvMaintainer.Factory)."""
        bitmap64 = flag(table.table_schema.options, DELETION_VECTORS_BITMAP64)
        return cls(read_vectors(table, partition, bucket, index), bitmap64=bitmap64)

    def of(self, file_name: str) -> DeletionVector | None:
        """A file's vector, if it has one."""
        return self.vectors.get(file_name)

    def delete(self, file_name: str, positions: np.ndarray) -> None:
        """Mark rows of a file deleted; rows already deleted stay so."""
        vector = self.vectors.get(file_name)
        fresh = new_vector(self.bitmap64) if vector is None else vector
        if add_positions(fresh, positions):
            self.vectors[file_name] = fresh
            self.modified = True

    def remove(self, file_names: Iterable[str]) -> None:
        """Drop the vectors of files a compaction rewrote."""
        for name in file_names:
            if self.vectors.pop(name, None) is not None:
                self.modified = True

    def write(self, table: FileStoreTable, partition: Partition, bucket: int) -> IndexFileMeta:
        """One new index file with every vector (only the version byte if none are left): it
        replaces all the bucket's index files, as BucketedDvMaintainer.writeSingleFile does."""
        blob = bytearray([INDEX_VERSION])
        ranges: dict[str, DeletionVectorMeta] = {}
        for file_name, vector in self.vectors.items():
            data, length = serialize(vector)
            ranges[file_name] = DeletionVectorMeta(file_name, len(blob), length, len(vector))
            blob += data
        return write_index_file(
            table, partition, bucket, DELETION_VECTORS, bytes(blob), len(ranges), ranges
        )


def write_index_file(
    table: FileStoreTable,
    partition: Partition,
    bucket: int,
    index_type: str,
    data: bytes,
    row_count: int,
    dv_ranges: dict[str, DeletionVectorMeta] | None = None,
) -> IndexFileMeta:
    """A new index file of a bucket holding `data`, and its metadata."""
    name = f"index-{uuid.uuid4()}-0"
    path, external = new_bucket_index_path(table, partition.values, bucket, name)
    with table.file_io.new_output_stream(path) as out:
        out.write(data)
    failpoint(INDEX_FILE_WRITTEN)
    return IndexFileMeta(
        index_type=index_type,
        file_name=name,
        file_size=len(data),
        row_count=row_count,
        dv_ranges=dv_ranges,
        external_path=path if external else None,
    )


def delete_index_file(
    table: FileStoreTable, partition: Partition, bucket: int, index: IndexFileMeta
) -> None:
    """Best-effort removal of an index file that will not be committed."""
    table.file_io.delete_quietly(index_path(table, partition, bucket, index))


def write_index_manifest(
    table: FileStoreTable,
    latest: Snapshot | None,
    added: Iterable[tuple[BucketKey, IndexFileMeta]],
    removed: Collection[str] = (),
    dropped: Collection[Partition] = (),
) -> str | None:
    """The latest index manifest without the `removed` index files (by name) and without any
    bucket index of the `dropped` partitions (overwritten: their files are gone), plus the
    `added` files: the entries IndexManifestFileHandler combines from a commit's ADD and DELETE
    index entries. The caller checks that a bucketed rewrite removes every file of its type."""
    added = list(added)
    if not added and not removed and not dropped:
        return latest.index_manifest if latest else None

    def gone(entry: IndexManifestEntry) -> bool:
        if entry.index_file.file_name in removed:
            return True
        return (
            entry.index_file.index_type in BUCKET_INDEX_TYPES
            and Partition.of_row(entry.partition) in dropped
        )

    entries = index_entries(table, latest)
    kept = [e for e in entries if not gone(e)]
    if len(kept) == len(entries) and not added:
        return latest.index_manifest if latest else None
    new = [
        IndexManifestEntry(ADD, partition.row(), bucket, index)
        for (partition, bucket), index in added
    ]
    return TableManifests(table).write_index(kept + new)
