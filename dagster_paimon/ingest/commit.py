"""APPEND and OVERWRITE snapshots of ingested level-0 files, conflict-checked (FileStoreCommit)."""

from __future__ import annotations

import logging
from collections.abc import Collection, Sequence

from pypaimon.manifest.schema.manifest_entry import ManifestEntry
from pypaimon.snapshot.snapshot import Snapshot
from pypaimon.table.file_store_table import FileStoreTable
from pypaimon.table.row.generic_row import GenericRow

from dagster_paimon.errors import CommitConflictError
from dagster_paimon.commit.producer import (
    ADD,
    DELETE,
    MAX_RETRIES,
    CommitOutcome,
    CommitRequest,
    commit_snapshot,
    entry_identifier,
)
from dagster_paimon.lsm.model.levels import live_entries
from dagster_paimon.lsm.compaction.task import delete_files
from dagster_paimon.ingest.bucket import fixed_bucket_count
from dagster_paimon.ingest.level0 import BucketWrite

log = logging.getLogger(__name__)

APPEND = "APPEND"
OVERWRITE = "OVERWRITE"


def find_commit(
    table: FileStoreTable, commit_user: str, identifier: int | None, after: int | None
) -> Snapshot | None:
    """The snapshot a commit user (and identifier, if given) produced after snapshot `after`."""
    manager = table.snapshot_manager()
    latest = manager.get_latest_snapshot()
    for snapshot_id in range((after or 0) + 1, (latest.id if latest else 0) + 1):
        snapshot = manager.get_snapshot_by_id(snapshot_id)
        if (
            snapshot is not None
            and snapshot.commit_user == commit_user
            and identifier in (None, snapshot.commit_identifier)
        ):
            return snapshot
    return None


def discard_writes(table: FileStoreTable, writes: Sequence[BucketWrite]) -> None:
    """Delete the level-0 files of writes that will not be committed."""
    for w in writes:
        delete_files(table, w.partition, w.bucket, w.files)


def _check_sequences(writes: Sequence[BucketWrite], live: list[ManifestEntry]) -> None:
    """New files must sort after everything live in their bucket, or another writer raced us."""
    ours = {}
    for w in writes:
        key = (tuple(w.partition), w.bucket)
        ours[key] = min(ours.get(key, w.first_sequence), w.first_sequence)
    for e in live:
        key = (tuple(e.partition.values), e.bucket)
        first = ours.get(key)
        if first is not None and e.file.max_sequence_number >= first:
            raise CommitConflictError(
                f"bucket {e.bucket} of partition {list(key[0])} got file {e.file.file_name} "
                f"with sequence numbers up to {e.file.max_sequence_number} from another writer "
                f"since this ingest started (its own start at {first}); nothing was committed, "
                "run the ingest again"
            )


def commit_ingest(
    table: FileStoreTable,
    writes: Sequence[BucketWrite],
    *,
    overwrite: Collection[tuple] | None,
    commit_user: str,
    identifier: int,
    max_retries: int = MAX_RETRIES,
) -> CommitOutcome | None:
    """One APPEND snapshot (or OVERWRITE of the given partitions); None when nothing changes.

    OVERWRITE deletes every file live in those partitions as of the snapshot it commits on top
    of, re-planned on every retry. On failure the new files are deleted and nothing changes.
    """
    total_buckets = fixed_bucket_count(table.table_schema)
    fields = table.partition_keys_fields
    adds = [
        ManifestEntry(ADD, GenericRow(list(w.partition), fields), w.bucket, total_buckets, f)
        for w in writes
        for f in w.files
    ]
    replaced = None if overwrite is None else {tuple(p) for p in overwrite}
    cache: dict[int | None, list[ManifestEntry]] = {}

    def live(latest: Snapshot | None) -> list[ManifestEntry]:
        key = latest.id if latest else None
        if key not in cache:
            cache.clear()
            cache[key] = live_entries(table, latest, with_stats=replaced is not None)
        return cache[key]

    def plan(latest: Snapshot | None) -> list[ManifestEntry]:
        if replaced is None:
            return adds
        deletes = [
            ManifestEntry(DELETE, e.partition, e.bucket, e.total_buckets, e.file)
            for e in live(latest)
            if tuple(e.partition.values) in replaced
        ]
        return deletes + adds

    def check(latest: Snapshot | None, entries: list[ManifestEntry]) -> None:
        current = live(latest)
        existing = {entry_identifier(tuple(e.partition.values), e.bucket, e.file) for e in current}
        for e in adds:
            if entry_identifier(tuple(e.partition.values), e.bucket, e.file) in existing:
                raise CommitConflictError(f"file {e.file.file_name} is already committed")
        if replaced is None:
            _check_sequences(writes, current)

    if not adds and (replaced is None or not plan(table.snapshot_manager().get_latest_snapshot())):
        return None
    kind = APPEND if replaced is None else OVERWRITE
    request = CommitRequest(
        kind, plan, check, commit_user, identifier, lambda: discard_writes(table, writes)
    )
    outcome = commit_snapshot(table, request, max_retries=max_retries)
    log.info(
        "ingest committed %s snapshot %d: %d level-0 files in %d buckets",
        kind,
        outcome.snapshot.id,
        len(adds),
        len({(tuple(w.partition), w.bucket) for w in writes}),
    )
    return outcome
