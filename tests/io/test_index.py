"""A bucket's deletion-vector index file and the index manifest, on real tables."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import fastavro
import numpy as np
import pyarrow as pa
import pytest
from pypaimon.index.deletion_vector_meta import DeletionVectorMeta
from pypaimon.index.index_file_meta import IndexFileMeta
from pypaimon.manifest.index_manifest_entry import IndexManifestEntry
from pypaimon.manifest.index_manifest_file import IndexManifestFile
from pyroaring import BitMap, BitMap64

from dagster_paimon.errors import CorruptMetadataError, InvalidOptionError
from dagster_paimon.io.index import (
    DELETION_VECTORS,
    BucketVectors,
    VectorIndex,
    counted_rows,
    delete_index_file,
    deleted_rows,
    deletion_indexes,
    read_vectors,
    write_index_manifest,
)
from dagster_paimon.io.vectors import deserialize, positions_of, serialize
from dagster_paimon.partition import Partition
from dagster_paimon.table import TableSpec, create_table
from tests.conftest import orders_batch, orders_spec, write_with_pypaimon

DAY1 = "2024-01-01"
DAY2 = "2024-01-02"


def partition_of(table, day: str) -> Partition:
    """The orders table's partition for one day."""
    return Partition((day,), tuple(table.partition_keys_fields))


def index_path(table, name: str) -> str:
    """Where a default-layout index file lives: <table>/index/<name>."""
    return os.path.join(table.table_path, "index", name)


def one(meta: IndexFileMeta) -> VectorIndex:
    """A bucket whose vectors lie in one index file."""
    return VectorIndex((meta,))


def filled(bitmap64: bool = False, **files: list[int]) -> BucketVectors:
    """BucketVectors with the given rows deleted per data file."""
    vectors = BucketVectors({}, bitmap64=bitmap64)
    for name, positions in files.items():
        vectors.delete(f"{name}.parquet", np.array(positions, dtype=np.int64))
    return vectors


def hash_entry(partition: Partition, bucket: int, name: str) -> IndexManifestEntry:
    """A HASH index entry, as dynamic-bucket tables carry."""
    meta = IndexFileMeta(index_type="HASH", file_name=name, file_size=40, row_count=10)
    return IndexManifestEntry(0, partition.row(), bucket, meta)


def dv_entry(partition: Partition, bucket: int, meta: IndexFileMeta) -> IndexManifestEntry:
    """A DELETION_VECTORS index entry."""
    return IndexManifestEntry(0, partition.row(), bucket, meta)


def entries_by_key(table, manifest: str) -> dict[tuple, IndexManifestEntry]:
    """Index manifest entries keyed by (index type, partition values, bucket), unique."""
    entries = IndexManifestFile(table).read(manifest)
    keyed = {(e.index_file.index_type, tuple(e.partition.values), e.bucket): e for e in entries}
    assert len(keyed) == len(entries), "one entry per (type, partition, bucket)"
    return keyed


@pytest.fixture
def table(warehouse):
    """An empty orders table (2 buckets, partitioned by dt)."""
    return create_table(warehouse, orders_spec())


@pytest.fixture
def committed(table):
    """The orders table after one pypaimon commit, and that commit's snapshot."""
    write_with_pypaimon(table, orders_batch(0))
    return table, table.snapshot_manager().get_latest_snapshot()


# --- BucketVectors write / read --------------------------------------------------------------


def test_write_then_read_vectors_round_trip(table):
    """Each data file's deleted positions survive write + read_vectors."""
    part = partition_of(table, DAY1)
    wanted = {"a": [0, 5, 6, 7], "b": [1_000_000, 2**31 - 1], "c": list(range(100, 5000, 3))}
    vectors = filled(**wanted)
    assert vectors.modified
    meta = vectors.write(table, part, 1)

    back = read_vectors(table, part, 1, one(meta))
    assert set(back) == {"a.parquet", "b.parquet", "c.parquet"}
    for name, positions in wanted.items():
        assert type(back[f"{name}.parquet"]) is BitMap
        assert positions_of(back[f"{name}.parquet"]).tolist() == sorted(positions)


def test_written_meta_matches_file_bytes(table):
    """IndexFileMeta: version byte, each range's offset/length/cardinality, size and row count."""
    part = partition_of(table, DAY2)
    vectors = filled(a=[3, 1, 2], b=[9])
    meta = vectors.write(table, part, 0)

    assert meta.index_type == DELETION_VECTORS
    assert meta.file_name.startswith("index-") and meta.file_name.endswith("-0")
    assert meta.external_path is None
    assert meta.row_count == 2
    path = index_path(table, meta.file_name)
    data = Path(path).read_bytes()
    assert data[0] == 1
    assert meta.file_size == len(data)

    a_blob, a_len = serialize(BitMap([1, 2, 3]))
    b_blob, b_len = serialize(BitMap([9]))
    assert meta.dv_ranges == {
        "a.parquet": DeletionVectorMeta("a.parquet", 1, a_len, 3),
        "b.parquet": DeletionVectorMeta("b.parquet", 1 + len(a_blob), b_len, 1),
    }
    assert data == b"\x01" + a_blob + b_blob


def test_empty_map_writes_only_version_byte(table):
    """With no vectors the index file is the single version byte and row_count 0."""
    part = partition_of(table, DAY1)
    meta = BucketVectors({}, bitmap64=False).write(table, part, 0)
    assert Path(index_path(table, meta.file_name)).read_bytes() == b"\x01"
    assert meta.file_size == 1
    assert meta.row_count == 0
    assert not meta.dv_ranges
    assert read_vectors(table, part, 0, one(meta)) == {}


def test_each_write_makes_a_new_file(table):
    """A rewrite never overwrites the previous index file."""
    part = partition_of(table, DAY1)
    vectors = filled(a=[1])
    first = vectors.write(table, part, 0)
    second = vectors.write(table, part, 0)
    assert first.file_name != second.file_name
    assert os.path.exists(index_path(table, first.file_name))
    assert os.path.exists(index_path(table, second.file_name))


def test_read_vectors_without_index_is_empty(table):
    """No index meta (or one without ranges) reads as no vectors."""
    assert read_vectors(table, partition_of(table, DAY1), 0, None) == {}


def test_read_vectors_bad_version_is_corrupt(table):
    """An index file whose first byte is not version 1 raises CorruptMetadataError."""
    part = partition_of(table, DAY1)
    meta = filled(a=[1, 2]).write(table, part, 0)
    path = index_path(table, meta.file_name)
    data = bytearray(Path(path).read_bytes())
    data[0] = 2
    Path(path).write_bytes(bytes(data))
    with pytest.raises(CorruptMetadataError, match="unknown version"):
        read_vectors(table, part, 0, one(meta))


def test_read_vectors_corrupt_vector_names_the_file(table):
    """A damaged vector raises CorruptMetadataError naming the index file."""
    part = partition_of(table, DAY1)
    meta = filled(a=[1, 2], b=[3]).write(table, part, 0)
    path = index_path(table, meta.file_name)
    data = bytearray(Path(path).read_bytes())
    data[meta.dv_ranges["b.parquet"].offset + 9] ^= 0xFF
    Path(path).write_bytes(bytes(data))
    with pytest.raises(CorruptMetadataError, match=meta.file_name):
        read_vectors(table, part, 0, one(meta))


def test_read_vectors_mismatched_recorded_length_is_corrupt(table):
    """A range whose length disagrees with the file raises CorruptMetadataError."""
    part = partition_of(table, DAY1)
    meta = filled(a=[1, 2]).write(table, part, 0)
    good = meta.dv_ranges["a.parquet"]
    meta.dv_ranges["a.parquet"] = dataclasses.replace(good, length=good.length + 1)
    with pytest.raises(CorruptMetadataError, match="does not match"):
        read_vectors(table, part, 0, one(meta))


def test_unpartitioned_table_round_trip(warehouse):
    """Partition(()) works for write, read_vectors and the index manifest."""
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.string())])
    table = create_table(warehouse, TableSpec("db", "plain", schema, ("id",), 1))
    part = Partition(())
    meta = filled(a=[4, 2]).write(table, part, 0)
    assert positions_of(read_vectors(table, part, 0, one(meta))["a.parquet"]).tolist() == [2, 4]
    manifest = write_index_manifest(table, None, [((part, 0), meta)])
    entries = IndexManifestFile(table).read(manifest)
    assert len(entries) == 1
    assert entries[0].partition.values == []
    assert entries[0].index_file.dv_ranges == meta.dv_ranges


# --- BucketVectors bookkeeping ---------------------------------------------------------------


def test_delete_marks_modified_only_for_new_rows():
    """Deleting rows already deleted leaves modified False; a new row sets it."""
    vectors = BucketVectors({"a.parquet": BitMap([1, 2, 3])}, bitmap64=False)
    assert not vectors.modified
    vectors.delete("a.parquet", np.array([1, 3], dtype=np.int64))
    assert not vectors.modified
    assert vectors.of("a.parquet") == BitMap([1, 2, 3])
    vectors.delete("a.parquet", np.array([3, 4], dtype=np.int64))
    assert vectors.modified
    assert vectors.of("a.parquet") == BitMap([1, 2, 3, 4])


def test_delete_of_nothing_adds_no_vector():
    """Deleting no rows of a file without a vector leaves no (empty) vector behind."""
    vectors = BucketVectors({}, bitmap64=False)
    vectors.delete("a.parquet", np.array([], dtype=np.int64))
    assert vectors.of("a.parquet") is None
    assert vectors.vectors == {}
    assert not vectors.modified


def test_constructor_copies_the_mapping():
    """BucketVectors keeps its own dict: dropping a vector does not touch the caller's."""
    given = {"a.parquet": BitMap([1])}
    vectors = BucketVectors(given, bitmap64=False)
    vectors.remove(["a.parquet"])
    assert "a.parquet" in given


def test_remove_marks_modified_only_if_a_vector_existed():
    """remove of unknown files changes nothing; of a file with a vector, drops it."""
    vectors = BucketVectors({"a.parquet": BitMap([1]), "b.parquet": BitMap([2])}, bitmap64=False)
    vectors.remove(["x.parquet", "y.parquet"])
    assert not vectors.modified
    assert set(vectors.vectors) == {"a.parquet", "b.parquet"}
    vectors.remove(["x.parquet", "a.parquet"])
    assert vectors.modified
    assert vectors.of("a.parquet") is None
    assert set(vectors.vectors) == {"b.parquet"}


def test_delete_beyond_32_bit_raises(table):
    """On a 32-bit table, deleting a row past 2^31-1 raises InvalidOptionError."""
    vectors = BucketVectors({"a.parquet": BitMap([1])}, bitmap64=False)
    with pytest.raises(InvalidOptionError):
        vectors.delete("a.parquet", np.array([2**31], dtype=np.int64))
    assert vectors.of("a.parquet") == BitMap([1])
    assert not vectors.modified


def test_refused_delete_of_new_file_leaves_no_vector(table):
    """An InvalidOptionError for a file without a vector leaves no empty vector behind."""
    vectors = BucketVectors({}, bitmap64=False)
    with pytest.raises(InvalidOptionError):
        vectors.delete("a.parquet", np.array([2**31], dtype=np.int64))
    vectors.delete("b.parquet", np.array([1], dtype=np.int64))
    meta = vectors.write(table, partition_of(table, DAY1), 0)
    assert set(meta.dv_ranges) == {"b.parquet"}
    assert meta.row_count == 1


def test_restore_reads_current_vectors(table):
    """restore gives the written vectors, unmodified, and further deletes build on them."""
    part = partition_of(table, DAY1)
    meta = filled(a=[1, 2], b=[7]).write(table, part, 1)
    restored = BucketVectors.restore(table, part, 1, one(meta))
    assert not restored.modified
    assert not restored.bitmap64
    assert {n: positions_of(v).tolist() for n, v in restored.vectors.items()} == {
        "a.parquet": [1, 2],
        "b.parquet": [7],
    }
    restored.delete("c.parquet", np.array([0], dtype=np.int64))
    assert type(restored.of("c.parquet")) is BitMap
    again = read_vectors(table, part, 1, one(restored.write(table, part, 1)))
    assert {n: positions_of(v).tolist() for n, v in again.items()} == {
        "a.parquet": [1, 2],
        "b.parquet": [7],
        "c.parquet": [0],
    }


def test_bitmap64_option_makes_restore_use_64_bit_vectors(warehouse):
    """deletion-vectors.bitmap64=true: restored and new vectors are BitMap64, > 2^32 works."""
    table = create_table(warehouse, orders_spec(**{"deletion-vectors.bitmap64": "true"}))
    part = partition_of(table, DAY1)

    fresh = BucketVectors.restore(table, part, 0, None)
    assert fresh.bitmap64
    fresh.delete("a.parquet", np.array([1, 2**32 + 3], dtype=np.int64))
    assert type(fresh.of("a.parquet")) is BitMap64
    meta = fresh.write(table, part, 0)
    blob, recorded = serialize(BitMap64([1, 2**32 + 3]))
    assert meta.dv_ranges["a.parquet"] == DeletionVectorMeta("a.parquet", 1, recorded, 2)
    assert recorded == len(blob)

    restored = BucketVectors.restore(table, part, 0, one(meta))
    assert restored.bitmap64
    assert type(restored.of("a.parquet")) is BitMap64
    assert positions_of(restored.of("a.parquet")).tolist() == [1, 2**32 + 3]
    restored.delete("b.parquet", np.array([5], dtype=np.int64))
    assert type(restored.of("b.parquet")) is BitMap64


def test_without_bitmap64_option_restore_is_32_bit(table):
    """Without the option new vectors are 32-bit BitMap."""
    fresh = BucketVectors.restore(table, partition_of(table, DAY1), 0, None)
    assert not fresh.bitmap64
    fresh.delete("a.parquet", np.array([1], dtype=np.int64))
    assert type(fresh.of("a.parquet")) is BitMap


# --- index file location ---------------------------------------------------------------------


def test_default_location_is_table_index_dir(table):
    """By default the index file is <table>/index/index-<uuid>-0."""
    part = partition_of(table, DAY1)
    meta = filled(a=[1]).write(table, part, 1)
    path = index_path(table, meta.file_name)
    assert os.path.isfile(path)
    assert meta.external_path is None
    bucket_dir = os.path.join(table.table_path, f"dt={DAY1}", "bucket-1")
    assert not os.path.exists(os.path.join(bucket_dir, meta.file_name))
    assert positions_of(read_vectors(table, part, 1, one(meta))["a.parquet"]).tolist() == [1]


def test_index_file_in_data_file_dir_lives_in_bucket_dir(warehouse):
    """index-file-in-data-file-dir=true puts the file in the bucket dir, where reads find it."""
    table = create_table(warehouse, orders_spec(**{"index-file-in-data-file-dir": "true"}))
    part = partition_of(table, DAY2)
    meta = filled(a=[8, 9]).write(table, part, 1)
    in_bucket = os.path.join(table.table_path, f"dt={DAY2}", "bucket-1", meta.file_name)
    assert os.path.isfile(in_bucket)
    assert not os.path.exists(index_path(table, meta.file_name))
    assert Path(in_bucket).read_bytes()[0] == 1
    assert positions_of(read_vectors(table, part, 1, one(meta))["a.parquet"]).tolist() == [8, 9]
    delete_index_file(table, part, 1, meta)
    assert not os.path.exists(in_bucket)


def test_delete_index_file_is_quiet(table):
    """delete_index_file removes the file, and a second call does not raise."""
    part = partition_of(table, DAY1)
    meta = filled(a=[1]).write(table, part, 0)
    path = index_path(table, meta.file_name)
    assert os.path.isfile(path)
    delete_index_file(table, part, 0, meta)
    assert not os.path.exists(path)
    delete_index_file(table, part, 0, meta)


# --- deleted_rows ----------------------------------------------------------------------------


def test_deleted_rows_from_metadata_alone(table):
    """deleted_rows sums cardinalities per file without reading the index file."""
    part = partition_of(table, DAY1)
    meta = filled(a=[1, 2, 2, 3], b=list(range(100)), c=[7]).write(table, part, 0)
    delete_index_file(table, part, 0, meta)
    assert deleted_rows(one(meta)) == {"a.parquet": 3, "b.parquet": 100, "c.parquet": 1}


def test_deleted_rows_without_ranges_is_empty():
    """No meta, or a meta with no ranges, means no deleted rows."""
    assert deleted_rows(None) == {}
    empty = IndexFileMeta(DELETION_VECTORS, "index-x-0", 1, 0, dv_ranges=None)
    assert deleted_rows(one(empty)) == {}


def test_deleted_rows_treats_missing_cardinality_as_zero():
    """An old-format range without cardinality counts as 0."""
    meta = IndexFileMeta(
        DELETION_VECTORS, "index-x-0", 30, 1, {"a.parquet": DeletionVectorMeta("a.parquet", 1, 20)}
    )
    assert deleted_rows(one(meta)) == {"a.parquet": 0}


def test_counted_rows_reads_the_vectors_whose_count_is_not_recorded(table):
    """Java 0.9/1.0 wrote no cardinality: the count comes from the vector itself, read from
    the index files lacking one only."""
    part = partition_of(table, DAY1)
    known = filled(a=[1, 2]).write(table, part, 0)
    old = filled(b=[3, 4, 5]).write(table, part, 0)
    old.dv_ranges = {
        n: DeletionVectorMeta(n, m.offset, m.length, None) for n, m in old.dv_ranges.items()
    }
    index = VectorIndex((known, old))
    assert deleted_rows(index) == {"a.parquet": 2, "b.parquet": 0}
    delete_index_file(table, part, 0, known)  # not read: its counts are recorded
    assert counted_rows(table, part, 0, index) == {"a.parquet": 2, "b.parquet": 3}
    assert counted_rows(table, part, 0, None) == {}


# --- index manifest --------------------------------------------------------------------------


def test_write_index_manifest_without_changes_keeps_latest(committed):
    """No change: the latest manifest name (or None) is returned, nothing written."""
    table, snapshot = committed
    assert write_index_manifest(table, None, []) is None
    assert write_index_manifest(table, snapshot, []) == snapshot.index_manifest
    with_manifest = dataclasses.replace(snapshot, index_manifest="index-manifest-abc")
    assert write_index_manifest(table, with_manifest, []) == "index-manifest-abc"


def test_write_index_manifest_from_nothing(committed):
    """Without a previous manifest the new one holds exactly the given entries."""
    table, snapshot = committed
    assert snapshot.index_manifest is None
    p1, p2 = partition_of(table, DAY1), partition_of(table, DAY2)
    m1 = filled(a=[1, 2]).write(table, p1, 0)
    m2 = filled(b=[3]).write(table, p2, 1)
    name = write_index_manifest(table, snapshot, [((p1, 0), m1), ((p2, 1), m2)])
    keyed = entries_by_key(table, name)
    assert set(keyed) == {(DELETION_VECTORS, (DAY1,), 0), (DELETION_VECTORS, (DAY2,), 1)}
    got = keyed[(DELETION_VECTORS, (DAY1,), 0)].index_file
    assert got.file_name == m1.file_name
    assert got.dv_ranges == m1.dv_ranges
    assert got.row_count == 1
    assert all(e.kind == 0 for e in keyed.values())

    indexes = deletion_indexes(table, dataclasses.replace(snapshot, index_manifest=name))
    assert indexes == {(p1, 0): one(m1), (p2, 1): one(m2)}
    assert indexes[(p2, 1)].ranges == m2.dv_ranges


def test_write_index_manifest_replaces_only_given_files(committed):
    """The removed DV file is replaced; other buckets' DV and HASH entries are kept."""
    table, snapshot = committed
    p1, p2 = partition_of(table, DAY1), partition_of(table, DAY2)
    old_10 = filled(a=[1]).write(table, p1, 0)
    old_11 = filled(b=[2]).write(table, p1, 1)
    old_20 = filled(c=[3]).write(table, p2, 0)
    base = IndexManifestFile(table).write(
        [
            dv_entry(p1, 0, old_10),
            dv_entry(p1, 1, old_11),
            dv_entry(p2, 0, old_20),
            hash_entry(p1, 0, "index-hash-p1-0"),
            hash_entry(p2, 1, "index-hash-p2-1"),
        ]
    )
    latest = dataclasses.replace(snapshot, index_manifest=base)

    new_10 = filled(a=[1, 5], d=[0]).write(table, p1, 0)
    new_21 = filled(e=[4]).write(table, p2, 1)
    name = write_index_manifest(
        table, latest, [((p1, 0), new_10), ((p2, 1), new_21)], {old_10.file_name}
    )
    assert name != base

    keyed = entries_by_key(table, name)
    assert {k: e.index_file.file_name for k, e in keyed.items()} == {
        (DELETION_VECTORS, (DAY1,), 0): new_10.file_name,
        (DELETION_VECTORS, (DAY1,), 1): old_11.file_name,
        (DELETION_VECTORS, (DAY2,), 0): old_20.file_name,
        (DELETION_VECTORS, (DAY2,), 1): new_21.file_name,
        ("HASH", (DAY1,), 0): "index-hash-p1-0",
        ("HASH", (DAY2,), 1): "index-hash-p2-1",
    }
    assert keyed[(DELETION_VECTORS, (DAY1,), 0)].index_file.dv_ranges == new_10.dv_ranges
    assert keyed[(DELETION_VECTORS, (DAY1,), 1)].index_file.dv_ranges == old_11.dv_ranges
    hash_meta = keyed[("HASH", (DAY1,), 0)].index_file
    assert (hash_meta.file_size, hash_meta.row_count, hash_meta.dv_ranges) == (40, 10, None)

    # The previous manifest is untouched.
    assert len(IndexManifestFile(table).read(base)) == 5

    after = deletion_indexes(table, dataclasses.replace(snapshot, index_manifest=name))
    assert set(after) == {(p1, 0), (p1, 1), (p2, 0), (p2, 1)}
    vectors = read_vectors(table, p1, 0, after[(p1, 0)])
    assert {n: positions_of(v).tolist() for n, v in vectors.items()} == {
        "a.parquet": [1, 5],
        "d.parquet": [0],
    }
    assert deleted_rows(after[(p1, 0)]) == {"a.parquet": 2, "d.parquet": 1}


def test_write_index_manifest_with_empty_bucket_file(committed):
    """A bucket whose vectors were all removed gets an entry for its one-byte file."""
    table, snapshot = committed
    p1 = partition_of(table, DAY1)
    old = filled(a=[1]).write(table, p1, 0)
    base = IndexManifestFile(table).write([dv_entry(p1, 0, old)])
    vectors = BucketVectors.restore(table, p1, 0, one(old))
    vectors.remove(["a.parquet"])
    assert vectors.modified
    empty = vectors.write(table, p1, 0)
    name = write_index_manifest(
        table,
        dataclasses.replace(snapshot, index_manifest=base),
        [((p1, 0), empty)],
        {old.file_name},
    )
    keyed = entries_by_key(table, name)
    got = keyed[(DELETION_VECTORS, (DAY1,), 0)].index_file
    assert (got.file_name, got.row_count, got.file_size) == (empty.file_name, 0, 1)
    assert len(keyed) == 1
    indexes = deletion_indexes(table, dataclasses.replace(snapshot, index_manifest=name))
    assert read_vectors(table, p1, 0, indexes[(p1, 0)]) == {}
    assert deleted_rows(indexes[(p1, 0)]) == {}


def test_deletion_indexes_ignores_other_types_and_missing_manifest(committed):
    """deletion_indexes lists DV entries only; no snapshot or no manifest means none."""
    table, snapshot = committed
    p1 = partition_of(table, DAY1)
    assert deletion_indexes(table, None) == {}
    assert deletion_indexes(table, snapshot) == {}
    only_hash = IndexManifestFile(table).write([hash_entry(p1, 0, "index-hash-0")])
    assert deletion_indexes(table, dataclasses.replace(snapshot, index_manifest=only_hash)) == {}


def test_written_vectors_read_by_deserialize_at_recorded_offsets(table):
    """Every dv range points at a vector deserialize accepts with the recorded length."""
    part = partition_of(table, DAY1)
    meta = filled(a=[1], b=[2, 3], c=list(range(70_000, 70_500))).write(table, part, 0)
    data = Path(index_path(table, meta.file_name)).read_bytes()
    ends = []
    for name, rng in meta.dv_ranges.items():
        vector = deserialize(data[rng.offset :], rng.length)
        assert len(vector) == rng.cardinality
        ends.append(rng.offset + 4 + rng.length + 4)
        assert name in {"a.parquet", "b.parquet", "c.parquet"}
    assert max(ends) == len(data)


def test_index_manifest_writes_deletion_vector_ranges_as_java_does(table):
    """Java's writer restore (DeletionVectorsIndexFile.readAllDeletionVectors) needs a list for a
    deletion-vector file left without vectors; a HASH index has none, as Java writes it."""
    part = partition_of(table, DAY1)
    empty = IndexFileMeta(DELETION_VECTORS, "index-empty", 1, 0, dv_ranges={})
    manifest = write_index_manifest(
        table,
        None,
        [((part, 0), empty), ((partition_of(table, DAY2), 1), hash_entry(part, 1, "h").index_file)],
    )
    with open(os.path.join(table.table_path, "manifest", manifest), "rb") as f:
        ranges = {r["_INDEX_TYPE"]: r["_DELETIONS_VECTORS_RANGES"] for r in fastavro.reader(f)}
    assert ranges == {DELETION_VECTORS: [], "HASH": None}


# --- several index files of a bucket ----------------------------------------------------------


def test_several_index_files_read_as_their_union(committed):
    """A bucket's vectors lie in several files (Java's unaware-bucket writers): read all."""
    table, snapshot = committed
    p1 = partition_of(table, DAY1)
    first = filled(a=[1, 2]).write(table, p1, 0)
    second = filled(b=[3], c=[0, 5, 9]).write(table, p1, 0)
    base = IndexManifestFile(table).write([dv_entry(p1, 0, first), dv_entry(p1, 0, second)])
    index = deletion_indexes(table, dataclasses.replace(snapshot, index_manifest=base))[(p1, 0)]
    assert index.names == tuple(sorted((first.file_name, second.file_name)))
    assert deleted_rows(index) == {"a.parquet": 2, "b.parquet": 1, "c.parquet": 3}
    assert index.holders == {
        "a.parquet": first.file_name,
        "b.parquet": second.file_name,
        "c.parquet": second.file_name,
    }
    vectors = BucketVectors.restore(table, p1, 0, index)
    assert {n: positions_of(v).tolist() for n, v in vectors.vectors.items()} == {
        "a.parquet": [1, 2],
        "b.parquet": [3],
        "c.parquet": [0, 5, 9],
    }
    assert index.of({second.file_name}) == one(second)
    # replacing one file by name keeps the other
    name = write_index_manifest(
        table, dataclasses.replace(snapshot, index_manifest=base), [], {second.file_name}
    )
    after = deletion_indexes(table, dataclasses.replace(snapshot, index_manifest=name))
    assert after == {(p1, 0): one(first)}


def test_a_vector_in_two_index_files_is_corrupt(committed):
    """No reader could tell which of two vectors of one data file holds: refuse to guess."""
    table, snapshot = committed
    p1 = partition_of(table, DAY1)
    first = filled(a=[1]).write(table, p1, 0)
    second = filled(a=[2]).write(table, p1, 0)
    base = IndexManifestFile(table).write([dv_entry(p1, 0, first), dv_entry(p1, 0, second)])
    index = deletion_indexes(table, dataclasses.replace(snapshot, index_manifest=base))[(p1, 0)]
    with pytest.raises(CorruptMetadataError, match=r"a\.parquet has a deletion vector in two"):
        deleted_rows(index)
    with pytest.raises(CorruptMetadataError, match=r"a\.parquet has a deletion vector in two"):
        read_vectors(table, p1, 0, index)
