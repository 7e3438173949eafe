"""One producer per snapshot kind: append, overwrite, compact and manifest compaction."""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import ClassVar, Protocol

from dagster_paimon.commit.changes import BucketChange, discard_all
from dagster_paimon.commit.conflicts import (
    apply_entries,
    check_key_ranges,
    check_sequences_after,
    sequence_conflicts,
)
from dagster_paimon.commit.manifest_merge import ManifestWriter
from dagster_paimon.commit.producer import MAX_RETRIES, SnapshotProducer
from dagster_paimon.errors import CommitConflictError, InvalidOptionError
from dagster_paimon.failpoints import FILES_RESEQUENCED, failpoint
from dagster_paimon.format.manifest import IndexFileMeta, ManifestEntry, ManifestFileMeta
from dagster_paimon.format.metadata import Snapshot
from dagster_paimon.format.table import FileStoreTable
from dagster_paimon.io.filekind import DELETE
from dagster_paimon.io.index import (
    DELETION_VECTORS,
    VectorIndex,
    bucket_indexes,
    deletion_indexes,
    write_index_manifest,
)
from dagster_paimon.io.paths import delete_data_files
from dagster_paimon.options import DELETION_VECTORS as DELETION_VECTORS_ENABLED
from dagster_paimon.options import flag
from dagster_paimon.partition import Partition
from dagster_paimon.snapshot.entries import entry_identifier
from dagster_paimon.snapshot.resolve import APPEND, COMPACT, OVERWRITE
from dagster_paimon.table import is_unaware

log = logging.getLogger(__name__)

BucketKey = tuple[Partition, int]


Resequence = Callable[[BucketChange, int], BucketChange]
"""A change with its new files rewritten, every sequence number moved up by the shift."""


def _delete_data_files(table: FileStoreTable, changes: Iterable[BucketChange]) -> None:
    """Delete the data files the changes wrote (not their index files, which others share)."""
    for change in changes:
        delete_data_files(table, change.partition, change.bucket, change.new_files)


def added_indexes(changes: Sequence[BucketChange]) -> list[tuple[BucketKey, IndexFileMeta]]:
    """The new index file of each change that wrote one."""
    return [((c.partition, c.bucket), c.index) for c in changes if c.index is not None]


def removed_indexes(changes: Sequence[BucketChange]) -> set[str]:
    """The index files the changes replace or drop."""
    return {name for c in changes if c.index is not None or c.drop_index for name in c.base_index}


def check_bucket_counts(live: Iterable[ManifestEntry], changes: Sequence[BucketChange]) -> None:
    """Refuse appending to a partition whose files record another bucket count (a rescaled
    partition), as Java's writers do (AbstractFileStoreWrite: "Try to write ... with a new
    bucket num"): its keys live in other buckets, so the write would duplicate them."""
    ours = {c.partition: c.total_buckets for c in changes if c.bucket >= 0 and c.total_buckets > 0}
    if not ours:
        return
    for e in live:
        if e.bucket < 0 or e.total_buckets <= 0:
            continue
        partition = Partition.of_row(e.partition)
        count = ours.get(partition)
        if count is not None and count != e.total_buckets:
            raise InvalidOptionError(
                f"cannot write partition {partition.label()} with {count} buckets (the table's "
                f"'bucket' option): its files were written with {e.total_buckets} buckets (it "
                f"was rescaled); alter the table's 'bucket' option to {e.total_buckets} or "
                f"rescale the partition to {count} first; nothing was written"
            )


def _index_names(table: FileStoreTable, latest: Snapshot, kind: str) -> dict[BucketKey, tuple]:
    """The names of each bucket's index files of one type, sorted."""
    if kind == DELETION_VECTORS:
        return {key: index.names for key, index in deletion_indexes(table, latest).items()}
    return {key: (index.file_name,) for key, index in bucket_indexes(table, latest, kind).items()}


def _kept_apart(index: VectorIndex | None, change: BucketChange) -> bool:
    """An unaware-bucket partition's change replaces only the index files it touched: they must
    all be there still, and every data file it rewrote must have its vector where it had it
    (in one of those files, or nowhere): a delete committed meanwhile would be lost (Java's
    ConflictDetection pairs each deleted file with its deletion-vector file for this)."""
    if index is None:
        return not change.base_index
    base = set(change.base_index)
    holders = index.holders
    return base <= set(index.names) and all(
        holders[f.file_name] in base for f in change.deleted if f.file_name in holders
    )


def check_index_bases(
    table: FileStoreTable, latest: Snapshot, changes: Sequence[BucketChange], what: str
) -> None:
    """A bucket whose index we replace must still have the index files we started from: all of
    its files of that type; for an unaware-bucket partition's vectors, the files the change
    touched (Java keeps the others: AppendDeleteFileMaintainer), and no new vector of a file it
    rewrote."""
    unaware = is_unaware(table.table_schema) and flag(
        table.table_schema.options, DELETION_VECTORS_ENABLED
    )
    current: dict[str, dict[BucketKey, tuple]] = {}
    vectors: dict[BucketKey, VectorIndex] | None = None
    for c in changes:
        kind = c.index.index_type if c.index is not None else DELETION_VECTORS
        key = (c.partition, c.bucket)
        if kind == DELETION_VECTORS and unaware:
            if not (c.index or c.drop_index or c.deleted):
                continue
            if vectors is None:
                vectors = deletion_indexes(table, latest)
            same = _kept_apart(vectors.get(key), c)
        elif c.index is None and not c.drop_index:
            continue
        else:
            if kind not in current:
                current[kind] = _index_names(table, latest, kind)
            same = current[kind].get(key, ()) == c.base_index
        if not same:
            raise CommitConflictError(
                f"the {kind} index of bucket {c.bucket} of partition {c.partition.label()} "
                f"changed since this {what} started; nothing was committed, run the {what} again"
            )


class AppendProducer(SnapshotProducer):
    """New level-0 files (Java's APPEND commit of a writer's new files).

    `first_sequences` holds, per bucket, the first sequence number this write used: a file
    another writer committed meanwhile with a sequence at or above it means the two writes
    interleave, which Paimon's sequence order cannot express. With `resequence`, an attempt
    that finds such a bucket first rewrites our files there numbered after the other writer's
    (at most `max_resequences` times), so the write that commits last wins, as in Paimon.
    """

    kind = APPEND
    operation = "ingest"
    idempotent = False
    live_stats: ClassVar[bool] = False

    def __init__(
        self,
        table: FileStoreTable,
        changes: Sequence[BucketChange],
        *,
        first_sequences: Mapping[BucketKey, int] | None = None,
        resequence: Resequence | None = None,
        max_resequences: int = MAX_RETRIES,
        **kwargs,
    ):
        super().__init__(table, **kwargs)
        self.changes = list(changes)
        self.first_sequences = dict(first_sequences or {})
        self.resequence = resequence
        self.max_resequences = max_resequences
        self.resequences = 0

    def replan(self, latest: Snapshot | None) -> None:
        """Renumber our files of every bucket another writer reached since we started."""
        if self.resequence is None or self.resequences >= self.max_resequences:
            return  # check() reports any bucket still lost
        live = self.live(latest, with_stats=self.live_stats)
        behind = sequence_conflicts(live, self.first_sequences)
        if not behind:
            return
        self.resequences += 1
        lost = [key for key in self.first_sequences if key in behind]
        shifts = {
            key: behind[key].file.max_sequence_number + 1 - self.first_sequences[key]
            for key in lost
        }
        log.warning(
            "ingest into %s lost %s to another writer; rewriting its level-0 files there "
            "numbered after theirs (retry %d of %d)",
            self.table_name,
            ", ".join(f"bucket {b} of partition {p.label()}" for p, b in lost),
            self.resequences,
            self.max_resequences,
        )
        moved: dict[int, BucketChange] = {}
        try:
            for i, c in enumerate(self.changes):
                shift = shifts.get((c.partition, c.bucket))
                if shift is not None:
                    moved[i] = self.resequence(c, shift)
                    failpoint(FILES_RESEQUENCED)
        except BaseException:
            _delete_data_files(self.table, moved.values())
            raise
        superseded = [self.changes[i] for i in moved]
        self.changes = [moved.get(i, c) for i, c in enumerate(self.changes)]
        for key, shift in shifts.items():
            self.first_sequences[key] += shift
        _delete_data_files(self.table, superseded)

    def added_entries(self, latest: Snapshot | None) -> list[ManifestEntry]:
        """The new files, as ADD entries."""
        return [e for c in self.changes for e in c.entries()]

    def check(self, latest: Snapshot | None, entries: list[ManifestEntry]) -> None:
        """Our files are not committed yet, and no other writer interleaved with our buckets."""
        live = self.live(latest, with_stats=self.live_stats)
        existing = {entry_identifier(e) for e in live}
        for e in self.added_entries(latest):
            if entry_identifier(e) in existing:
                raise CommitConflictError(f"file {e.file.file_name} is already committed")
        check_sequences_after(live, self.first_sequences, "ingest")
        if self.kind == APPEND:  # an overwrite replaces the partitions' files (Java ignores it)
            check_bucket_counts(live, self.changes)
        if self.kind == APPEND and latest is not None:
            check_index_bases(self.table, latest, self.changes, "ingest")

    def index_manifest(self, latest: Snapshot | None) -> str | None:
        """The latest index manifest with the buckets' new HASH index files."""
        return write_index_manifest(
            self.table, latest, added_indexes(self.changes), removed_indexes(self.changes)
        )

    def discard(self) -> None:
        """Remove the level-0 files written for this commit."""
        discard_all(self.table, self.changes)


class OverwriteProducer(AppendProducer):
    """New files replacing every file of some partitions (Java's OVERWRITE commit)."""

    kind = OVERWRITE
    operation = "overwrite"
    idempotent = True  # replacing partitions with the same files twice leaves them as once
    live_stats = True  # its DELETE entries re-write the files' metadata in full

    def __init__(
        self,
        table: FileStoreTable,
        changes: Sequence[BucketChange],
        *,
        partitions: Collection[Partition],
        **kwargs,
    ):
        super().__init__(table, changes, **kwargs)
        self.partitions = set(partitions)

    def index_manifest(self, latest: Snapshot | None) -> str | None:
        """The latest index manifest without the overwritten partitions' indexes, plus the new
        HASH index files written for them."""
        return write_index_manifest(
            self.table,
            latest,
            added_indexes(self.changes),
            removed_indexes(self.changes),
            dropped=self.partitions,
        )

    def deleted_entries(self, latest: Snapshot | None) -> list[ManifestEntry]:
        """Every file live in the overwritten partitions, as of the attempt's latest snapshot."""
        return [
            ManifestEntry(DELETE, e.partition, e.bucket, e.total_buckets, e.file)
            for e in self.live(latest, with_stats=self.live_stats)
            if Partition(tuple(e.partition.values)) in self.partitions
        ]


class CompactProducer(SnapshotProducer):
    """Compaction results: files rewritten or upgraded (Java's COMPACT commit).

    `first_sequences` holds, per bucket, where the level-0 files a postpone move wrote start
    numbering; another writer reaching those numbers meanwhile is a conflict.
    """

    kind = COMPACT
    operation = "compact"

    def __init__(
        self,
        table: FileStoreTable,
        changes: Sequence[BucketChange],
        *,
        first_sequences: Mapping[BucketKey, int] | None = None,
        **kwargs,
    ):
        super().__init__(table, **kwargs)
        self.changes = list(changes)
        self.first_sequences = dict(first_sequences or {})

    def deleted_entries(self, latest: Snapshot | None) -> list[ManifestEntry]:
        """Every file rewritten, and every upgraded file at its old level."""
        return [e for c in self.changes for e in c.entries() if e.kind == DELETE]

    def added_entries(self, latest: Snapshot | None) -> list[ManifestEntry]:
        """Every file written, and every upgraded file at its new level."""
        return [e for c in self.changes for e in c.entries() if e.kind != DELETE]

    def check(self, latest: Snapshot | None, entries: list[ManifestEntry]) -> None:
        """Every replaced file must still be live; levels >= 1 must stay sorted runs; a bucket
        whose deletion vectors we replace must still have the vectors we started from."""
        if latest is None:
            raise CommitConflictError(f"{self.table_name} has no snapshot")
        live = self.live(latest)
        check_key_ranges(apply_entries(latest, live, entries))
        check_sequences_after(live, self.first_sequences, "compaction")
        check_index_bases(self.table, latest, self.changes, "compaction")

    def index_manifest(self, latest: Snapshot | None) -> str | None:
        """The latest index manifest with the new deletion-vector index of each bucket (none
        where a change dropped it)."""
        return write_index_manifest(
            self.table, latest, added_indexes(self.changes), removed_indexes(self.changes)
        )

    def changelog_entries(self, latest: Snapshot | None) -> list[ManifestEntry]:
        """The changelog files the compaction produced."""
        return [e for c in self.changes for e in c.changelog_entries()]

    def discard(self) -> None:
        """Remove the files the compaction wrote."""
        discard_all(self.table, self.changes)


class ManifestMerge(Protocol):
    """Merged manifests for a base snapshot, written through the attempt's writer."""

    def merged(self, latest: Snapshot, writer: ManifestWriter) -> list[ManifestFileMeta]:
        """The merged base manifest list of `latest`."""
        ...


class ManifestCompactProducer(SnapshotProducer):
    """A merged base manifest list and an empty delta: contents unchanged (Java's COMPACT)."""

    kind = COMPACT
    operation = "compact-manifests"

    def __init__(self, table: FileStoreTable, merge: ManifestMerge, **kwargs):
        super().__init__(table, **kwargs)
        self.merge = merge

    def check(self, latest: Snapshot | None, entries: list[ManifestEntry]) -> None:
        """Manifest compaction needs a snapshot to compact."""
        if latest is None:
            raise CommitConflictError(f"{self.table_name} has no snapshot to compact manifests of")

    def base_manifests(
        self, latest: Snapshot | None, writer: ManifestWriter
    ) -> list[ManifestFileMeta]:
        """The run's own merge (forced full, or its options) of whatever is latest now."""
        assert latest is not None, "check() refuses a table without snapshots"
        return self.merge.merged(latest, writer)
