"""Dynamic-bucket ingest (`bucket` = -1): Paimon's HASH index keeps keys in their buckets.

pypaimon (which implements Paimon's HashBucketAssigner) and our ingest write the same table in
turns. After each write every bucket's HASH index holds exactly the key hashes of its rows, no
key lives in two buckets, known keys never move, new keys fill buckets up to the target row
count; pypaimon accepts our index for its next write, and pypaimon and pypaimon-rust read the
model.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from pypaimon import Schema
from pypaimon_rust.datafusion import SQLContext

from dagster_paimon.errors import CommitConflictError, InvalidOptionError
from dagster_paimon.ingest.arrow import ingest_arrow
from dagster_paimon.ingest.commit import commit_ingest
from dagster_paimon.io.hashes import read_hashes
from dagster_paimon.io.index import HASH_INDEX, bucket_indexes
from dagster_paimon.io.read import read_file
from dagster_paimon.lsm.model.levels import read_levels
from dagster_paimon.lsm.write.dynamic import (
    DynamicAssigner,
    PartitionIndex,
    hash_indexes_at,
    key_hashes,
)
from dagster_paimon.lsm.write.layout import plan_write_layout
from dagster_paimon.lsm.write.level0 import Level0Writer, max_sequences
from dagster_paimon.options import DYNAMIC_BUCKET
from dagster_paimon.paimon_table import PaimonTable
from dagster_paimon.partition import Partition
from dagster_paimon.table import TableSpec, create_table, open_catalog, open_table
from tests.conftest import write_with_pypaimon
from tests.lsm.kvmodel import read_rows

SCHEMA = pa.schema(
    [
        pa.field("dt", pa.string(), nullable=False),
        pa.field("id", pa.int64(), nullable=False),
        pa.field("v", pa.string()),
    ]
)
TARGET = 4


def make_table(warehouse: str, **options: str):
    """A partitioned dynamic-bucket table with a small bucket target."""
    options = {"dynamic-bucket.target-row-num": str(TARGET), **options}
    return create_table(
        warehouse, TableSpec("db", "t", SCHEMA, ("dt", "id"), DYNAMIC_BUCKET, ("dt",), options)
    )


def batch(ids, tag: str) -> pa.Table:
    """Rows alternating between two days."""
    ids = list(ids)
    return pa.table(
        {"dt": [("a", "b")[i % 2] for i in range(len(ids))], "id": ids, "v": [tag] * len(ids)},
        schema=SCHEMA,
    )


def apply(model: dict, data: pa.Table) -> None:
    """The last write of each key wins."""
    for r in data.to_pylist():
        model[(r["dt"], r["id"])] = r


def layout(warehouse: str) -> dict[tuple, int]:
    """Each live key's bucket, checking every bucket's HASH index against its rows."""
    table = open_table(warehouse, "db.t")
    indexes = bucket_indexes(table, table.snapshot_manager().get_latest_snapshot(), HASH_INDEX)
    where: dict[tuple, int] = {}
    for b in read_levels(table).buckets:
        assert b.total_buckets == DYNAMIC_BUCKET
        rows = pa.concat_tables(
            pa.Table.from_batches(list(read_file(table, b.partition, b.bucket, f, 1024)))
            for f in b.levels.all_files()
        )
        hashes = np.unique(key_hashes(table.table_schema, rows))
        indexed = read_hashes(table, b.partition, b.bucket, indexes[(b.partition, b.bucket)])
        assert sorted(indexed.tolist()) == hashes.tolist(), "the index holds the bucket's keys"
        for r in rows.select(["dt", "id"]).to_pylist():
            key = (r["dt"], r["id"])
            assert where.setdefault(key, b.bucket) == b.bucket, f"{key} is in two buckets"
    return where


def readers_agree(warehouse: str, model: dict) -> None:
    """pypaimon and pypaimon-rust read the model."""
    table = open_table(warehouse, "db.t")
    assert {(r["dt"], r["id"]): r for r in read_rows(table)} == model
    ctx = SQLContext()
    ctx.register_catalog("paimon", {"warehouse": warehouse})
    rust = {
        (r["dt"], r["id"]): r
        for b in ctx.sql("SELECT dt, id, v FROM paimon.db.t")
        for r in b.to_pylist()
    }
    assert rust == model


def test_ingest_keeps_paimon_hash_index_with_pypaimon(warehouse):
    """pypaimon and our ingest write in turns; keys never move and buckets fill to the target."""
    make_table(warehouse)
    model: dict = {}
    first = batch(range(10), "p0")
    write_with_pypaimon(open_table(warehouse, "db.t"), first)
    apply(model, first)
    before = layout(warehouse)

    ours = batch(range(6, 24), "ours")
    ingest_arrow(open_table(warehouse, "db.t"), ours)
    apply(model, ours)
    after = layout(warehouse)
    assert {k: after[k] for k in before} == before, "known keys keep their bucket"
    sizes: dict[tuple, int] = {}
    for (dt, _), b in after.items():
        sizes[(dt, b)] = sizes.get((dt, b), 0) + 1
    assert max(sizes.values()) == TARGET
    assert sum(1 for n in sizes.values() if n < TARGET) <= 2, "one bucket per partition fills"
    readers_agree(warehouse, model)

    more = batch(range(20, 30), "p1")
    write_with_pypaimon(open_table(warehouse, "db.t"), more)  # pypaimon restores our index
    apply(model, more)
    final = layout(warehouse)
    assert {k: final[k] for k in after} == after
    readers_agree(warehouse, model)

    PaimonTable.open(warehouse, "db.t").compact(full=True)
    assert layout(warehouse) == final, "compaction leaves keys and indexes where they are"
    readers_agree(warehouse, model)


def test_overwrite_replaces_the_partition_index(warehouse):
    """An overwrite assigns from scratch and drops the overwritten partition's HASH files."""
    make_table(warehouse)
    write_with_pypaimon(open_table(warehouse, "db.t"), batch(range(12), "old"))
    model: dict = {}
    apply(model, batch(range(12), "old"))
    fresh = pa.table({"dt": ["a"] * 3, "id": [100, 101, 102], "v": ["new"] * 3}, schema=SCHEMA)
    ingest_arrow(open_table(warehouse, "db.t"), fresh, mode="overwrite")
    model = {k: v for k, v in model.items() if k[0] != "a"}
    apply(model, fresh)
    readers_agree(warehouse, model)
    where = layout(warehouse)
    assert {b for (dt, _), b in where.items() if dt == "a"} == {0}


def test_cross_partition_keys_are_refused(warehouse):
    """A primary key without the partition key would let keys move partition: refused."""
    catalog = open_catalog(warehouse, None, create=True)
    catalog.create_database("db", True)
    schema = Schema.from_pyarrow_schema(
        SCHEMA, partition_keys=["dt"], primary_keys=["id"], options={"bucket": "-1"}
    )
    catalog.create_table("db.t", schema, False)
    with pytest.raises(InvalidOptionError, match="cross-partition"):
        ingest_arrow(open_table(warehouse, "db.t"), batch(range(4), "x"))
    assert open_table(warehouse, "db.t").snapshot_manager().get_latest_snapshot() is None


def test_assignment_rules(warehouse):
    """Known hashes keep their bucket; new ones fill non-full owned buckets, then new owned ids."""
    make_table(warehouse, **{"dynamic-bucket.max-buckets": "4"})
    table = open_table(warehouse, "db.t")
    assigner = DynamicAssigner(table, {}, assigners=2, assign_id=1)
    index = PartitionIndex(
        np.array([7, 9], dtype=np.int32), np.array([1, 3], dtype=np.int16), {1: 3}, {1}
    )
    assigner.partitions[Partition(("a",))] = index
    hashes = np.array([9, 20, 21, 20, 22, 23, 24, 25, 26, 27, 28], dtype=np.int32)
    buckets = assigner.assign(Partition(("a",)), hashes)
    # 9 is known (bucket 3); 20 fills bucket 1; 21..24 open owned bucket 3 (odd ids only);
    # max-buckets 4 leaves no owned id, so the rest go to a random owned bucket
    assert buckets[:6].tolist() == [3, 1, 3, 1, 3, 3]
    assert set(buckets[6:].tolist()) <= {1, 3}
    assert assigner.assign(Partition(("a",)), np.array([20, 21], np.int32)).tolist() == [1, 3]


def test_concurrent_ingests_into_one_bucket_conflict(warehouse):
    """Two ingests planned on the same snapshot: the second cannot commit over the first."""
    make_table(warehouse)
    write_with_pypaimon(open_table(warehouse, "db.t"), batch(range(2), "base"))
    table = open_table(warehouse, "db.t")
    levels = read_levels(table)
    indexes = hash_indexes_at(table, levels.snapshot_id)
    writers = []
    for tag in ("one", "two"):
        writer = Level0Writer(
            table,
            plan_write_layout(table.table_schema, SCHEMA),
            max_sequences(levels),
            assigner=DynamicAssigner(table, indexes),
            hash_indexes=indexes,
        )
        writer.write(batch([5, 6], tag).to_batches()[0])
        writers.append(writer.finish())
    commit_ingest(table, writers[0], overwrite=None, commit_user="u1", identifier=1)
    again = open_table(warehouse, "db.t")
    with pytest.raises(CommitConflictError):
        commit_ingest(again, writers[1], overwrite=None, commit_user="u2", identifier=2)
