"""Dynamic buckets (`bucket` = -1): a key keeps its bucket, new keys fill buckets up to a target.

Paimon's HashBucketAssigner and PartitionIndex, vectorized. Each partition's HASH index files
(io/hashes.py) say which key hashes (BinaryRow hash of the trimmed primary key) live in which
bucket. Writing assigns:
- a hash already indexed: its bucket;
- a new hash, in order of first arrival: the first owned bucket still under
  `dynamic-bucket.target-row-num` hashes, else the smallest owned bucket id not yet used (below
  `dynamic-bucket.max-buckets`), else a random owned bucket.
Several assigners can run at once: each key goes to assigner `computeAssigner(partition hash,
key hash)` and an assigner only fills buckets `b % assigners == id`, so no two assigners give one
key two buckets or overfill one bucket.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from dagster_paimon.errors import InvalidOptionError
from dagster_paimon.format.manifest import IndexFileMeta
from dagster_paimon.format.schema import TableSchema
from dagster_paimon.format.table import FileStoreTable
from dagster_paimon.io.hashes import read_hashes
from dagster_paimon.io.index import HASH_INDEX, bucket_indexes
from dagster_paimon.io.kv import trimmed_primary_keys
from dagster_paimon.lsm.write.bucket import binary_row_hashes
from dagster_paimon.options import (
    BUCKET,
    DYNAMIC_BUCKET_ASSIGNER_PARALLELISM,
    DYNAMIC_BUCKET_INITIAL_BUCKETS,
    DYNAMIC_BUCKET_MAX_BUCKETS,
    DYNAMIC_BUCKET_TARGET_ROW_NUM,
    at_least,
    read_option,
)
from dagster_paimon.partition import Partition
from dagster_paimon.snapshot.resolve import resolve_snapshot
from dagster_paimon.table import is_dynamic

DEFAULT_TARGET_ROWS = 2_000_000
MAX_BUCKET_IDS = 32768  # Java's Short.MAX_VALUE + 1
_ROW = "__row"

BucketKey = tuple[Partition, int]


def check_dynamic_writable(schema: TableSchema) -> None:
    """Refuse dynamic-bucket tables whose keys may move between partitions."""
    missing = [k for k in schema.partition_keys if k not in schema.primary_keys]
    if missing:
        raise InvalidOptionError(
            f"table option '{BUCKET}' is -1 and the primary keys {list(schema.primary_keys)} "
            f"lack partition keys {missing}: a key may then move between partitions "
            "(cross-partition upsert), which needs Paimon's global key index; dagster-paimon "
            "does not write such tables"
        )


def hash_indexes_at(
    table: FileStoreTable, snapshot_id: int | None, *, overwrite: bool = False
) -> dict[BucketKey, IndexFileMeta]:
    """The HASH index of each bucket a write starts from: none for fixed buckets or an
    overwrite (the partitions it writes are replaced whole)."""
    if overwrite or not is_dynamic(table.table_schema):
        return {}
    return bucket_indexes(table, resolve_snapshot(table, snapshot_id), HASH_INDEX)


def key_hashes(schema: TableSchema, values: pa.RecordBatch | pa.Table) -> np.ndarray:
    """The hash Paimon indexes for each row: BinaryRow hash of its trimmed primary key."""
    return binary_row_hashes([values.column(k) for k in trimmed_primary_keys(schema)])


def compute_channels(
    partition_hashes: np.ndarray, hashes: np.ndarray, channels: int, assigners: int
) -> np.ndarray:
    """Java's BucketAssigner.computeAssigner: the assigner task each key goes to."""
    start = np.abs(np.fmod(partition_hashes.astype(np.int64), channels))
    offset = np.abs(np.fmod(hashes.astype(np.int64), assigners))
    return ((start + offset) % channels).astype(np.int32)


def assigner_counts(options: Mapping[str, str], parallelism: int) -> tuple[int, int]:
    """(assigner tasks, assigners owning buckets) as Paimon's Spark writer chooses them."""
    channels = read_option(options, DYNAMIC_BUCKET_ASSIGNER_PARALLELISM, at_least(1), parallelism)
    most = DynamicOptions.of(options).max_buckets
    if most != -1:
        channels = min(most, channels)
    initial = read_option(options, DYNAMIC_BUCKET_INITIAL_BUCKETS, at_least(1), None)
    return channels, min(initial, channels) if initial is not None else channels


@dataclass(frozen=True)
class DynamicOptions:
    """The options dynamic-bucket assignment reads."""

    target_rows: int
    max_buckets: int

    @classmethod
    def of(cls, options: Mapping[str, str]) -> DynamicOptions:
        """Parsed and checked as Paimon does."""
        target = read_option(
            options, DYNAMIC_BUCKET_TARGET_ROW_NUM, at_least(1), DEFAULT_TARGET_ROWS
        )
        most = read_option(options, DYNAMIC_BUCKET_MAX_BUCKETS, int, -1)
        if most != -1 and not 1 <= most <= MAX_BUCKET_IDS:
            raise InvalidOptionError(
                f"table option '{DYNAMIC_BUCKET_MAX_BUCKETS}' is {most}: it must be -1 or "
                f"between 1 and {MAX_BUCKET_IDS}"
            )
        return cls(target, most)


@dataclass
class PartitionIndex:
    """One partition's hash -> bucket map and the fill of the buckets one assigner owns."""

    hashes: np.ndarray
    buckets: np.ndarray
    fill: dict[int, int] = field(default_factory=dict)
    owned: set[int] = field(default_factory=set)

    def known(self, hashes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """For each hash: whether it is indexed, and its bucket if so."""
        if not len(self.hashes):
            return np.zeros(len(hashes), dtype=bool), np.zeros(len(hashes), dtype=np.int32)
        at = np.minimum(np.searchsorted(self.hashes, hashes), len(self.hashes) - 1)
        found = self.hashes[at] == hashes
        return found, self.buckets[at].astype(np.int32)

    def add(self, hashes: np.ndarray, buckets: np.ndarray) -> None:
        """Index new (distinct, unindexed) hashes."""
        merged = np.concatenate([self.hashes, hashes])
        order = np.argsort(merged, kind="stable")
        self.hashes = merged[order]
        self.buckets = np.concatenate([self.buckets, buckets.astype(np.int16)])[order]


class DynamicAssigner:
    """One assigner (`assign_id` of `assigners`) over a table's HASH indexes at a snapshot."""

    def __init__(
        self,
        table: FileStoreTable,
        indexes: Mapping[BucketKey, IndexFileMeta],
        *,
        assigners: int = 1,
        assign_id: int = 0,
        rng: np.random.Generator | None = None,
    ):
        self.table = table
        self.schema = table.table_schema
        self.options = DynamicOptions.of(self.schema.options)
        self.indexes = indexes
        self.assigners = assigners
        self.assign_id = assign_id
        self.rng = rng or np.random.default_rng()
        self.max_bucket = 0
        self.partition_fields = tuple(table.partition_keys_fields)
        self.partitions: dict[Partition, PartitionIndex] = {}

    def _is_mine(self, bucket: int) -> bool:
        """BucketAssigner.isMyBucket."""
        return bucket % self.assigners == self.assign_id % self.assigners

    def _load(self, partition: Partition) -> PartitionIndex:
        """A partition's index, restored from its HASH files in index-manifest order."""
        hashes, buckets, fill = [], [], {}
        for (part, bucket), meta in self.indexes.items():
            if part != partition:
                continue
            found = read_hashes(self.table, part, bucket, meta)
            self.max_bucket = max(self.max_bucket, bucket)
            hashes.append(found)
            buckets.append(np.full(len(found), bucket, dtype=np.int16))
            if self._is_mine(bucket):
                fill[bucket] = int(meta.row_count)
        index = PartitionIndex(np.zeros(0, np.int32), np.zeros(0, np.int16), fill, set(fill))
        if hashes:
            index.add(np.concatenate(hashes), np.concatenate(buckets))
        return index

    def _place(self, index: PartitionIndex, count: int) -> np.ndarray:
        """Buckets for `count` new keys in arrival order (PartitionIndex.assign, in blocks)."""
        out: list[np.ndarray] = []
        target = self.options.target_rows
        for bucket in list(index.fill):
            room = target - index.fill[bucket]
            if room <= 0:
                del index.fill[bucket]
                continue
            take = min(room, count)
            out.append(np.full(take, bucket, dtype=np.int32))
            index.fill[bucket] += take
            count -= take
            if not count:
                return np.concatenate(out)
        most = self.options.max_buckets
        top = (MAX_BUCKET_IDS if most == -1 else most) - 1
        while count:
            fresh = None
            if not index.owned or self.max_bucket < top:
                fresh = next(
                    (b for b in range(top + 1) if self._is_mine(b) and b not in index.owned), None
                )
            if fresh is None:
                if most == -1 or not index.owned:
                    raise InvalidOptionError(
                        "no dynamic bucket id is left for new keys: raise "
                        f"'{DYNAMIC_BUCKET_TARGET_ROW_NUM}' or '{DYNAMIC_BUCKET_MAX_BUCKETS}'"
                    )
                pool = np.array(sorted(index.owned), dtype=np.int32)
                out.append(self.rng.choice(pool, count))
                break
            take = min(target, count)
            out.append(np.full(take, fresh, dtype=np.int32))
            index.fill[fresh] = take
            index.owned.add(fresh)
            self.max_bucket = max(self.max_bucket, fresh)
            count -= take
        return np.concatenate(out)

    def assign(self, partition: Partition, hashes: np.ndarray) -> np.ndarray:
        """The bucket of every row of one partition, rows given by key hash in arrival order."""
        index = self.partitions.get(partition)
        if index is None:
            index = self.partitions[partition] = self._load(partition)
        found, buckets = index.known(hashes)
        if found.all():
            return buckets
        unseen = hashes[~found]
        distinct, first, inverse = np.unique(unseen, return_index=True, return_inverse=True)
        arrival = np.argsort(first, kind="stable")
        placed = np.empty(len(distinct), dtype=np.int32)
        placed[arrival] = self._place(index, len(distinct))
        index.add(distinct, placed)
        buckets[~found] = placed[inverse.reshape(-1)]
        return buckets

    def assign_rows(self, values: pa.RecordBatch | pa.Table) -> np.ndarray:
        """The bucket of every row of a batch in the table's types, partition by partition."""
        hashes = key_hashes(self.schema, values)
        keys = list(self.schema.partition_keys)
        if not keys:
            return self.assign(Partition((), ()), hashes)
        rows = pa.table({**{k: values.column(k) for k in keys}, _ROW: np.arange(len(hashes))})
        groups = rows.group_by(keys, use_threads=False).aggregate([(_ROW, "list")])
        members = groups.column(f"{_ROW}_list")
        buckets = np.empty(len(hashes), dtype=np.int32)
        for i, spec in enumerate(groups.select(keys).to_pylist()):
            partition = Partition(tuple(spec[k] for k in keys), self.partition_fields)
            at = np.asarray(members[i].values)
            buckets[at] = self.assign(partition, hashes[at])
        return buckets
