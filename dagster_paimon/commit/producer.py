"""Snapshot commits: manifests, conflict checks, create-if-absent snapshot files, retry."""

from __future__ import annotations

import logging
import random
import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pypaimon.build_info import full_version as build_full_version
from pypaimon.common.json_util import JSON
from pypaimon.manifest.manifest_file_manager import ManifestFileManager
from pypaimon.manifest.manifest_list_manager import ManifestListManager
from pypaimon.manifest.schema.data_file_meta import DataFileMeta
from pypaimon.manifest.schema.manifest_entry import ManifestEntry
from pypaimon.manifest.schema.manifest_file_meta import ManifestFileMeta
from pypaimon.snapshot.snapshot import Snapshot
from pypaimon.table.file_store_table import FileStoreTable
from pypaimon.table.row.generic_row import GenericRow

from dagster_paimon.errors import CommitConflictError, CorruptMetadataError
from dagster_paimon.lsm.model.levels import Levels, live_entries
from dagster_paimon.lsm.compaction.task import CompactResult, delete_files
from dagster_paimon.storage.snapshots import create_snapshot_if_absent, update_latest_hint

log = logging.getLogger(__name__)

ADD, DELETE = 0, 1
COMPACT = "COMPACT"
MAX_RETRIES = 10
FIRST_BACKOFF_S = 0.01
MAX_BACKOFF_S = 10.0

SnapshotWriter = Callable[..., bool]


def entry_identifier(partition: tuple, bucket: int, f: DataFileMeta) -> tuple:
    """Paimon's FileEntry identifier: an upgrade (same name, other level) is another file."""
    return (
        tuple(partition),
        bucket,
        f.level,
        f.file_name,
        tuple(f.extra_files or ()),
        f.embedded_index,
        f.external_path,
    )


@dataclass(frozen=True)
class CommitOutcome:
    """The snapshot a commit produced and how many attempts it took."""

    snapshot: Snapshot
    attempts: int


def _entries(table: FileStoreTable, results: Sequence[CompactResult]) -> list[ManifestEntry]:
    """DELETE for every file replaced, ADD for every file produced (upgrades are both)."""
    fields = table.partition_keys_fields
    entries = []
    for r in results:
        partition = GenericRow(list(r.partition_values), fields)
        entries += [
            ManifestEntry(DELETE, partition, r.bucket, r.total_buckets, f) for f in r.before
        ]
        entries += [ManifestEntry(ADD, partition, r.bucket, r.total_buckets, f) for f in r.after]
    return entries


def check_conflicts(
    table: FileStoreTable, latest: Snapshot, entries: Sequence[ManifestEntry], num_levels: int
) -> None:
    """Every replaced file must still be live; the new layout must keep levels >= 1 sorted."""
    changed = {(tuple(e.partition.values), e.bucket) for e in entries}
    live: dict[tuple, dict[tuple, DataFileMeta]] = defaultdict(dict)
    for e in live_entries(table, latest):
        key = (tuple(e.partition.values), e.bucket)
        if key in changed:
            live[key][entry_identifier(key[0], key[1], e.file)] = e.file
    for e in entries:
        key = (tuple(e.partition.values), e.bucket)
        ident = entry_identifier(key[0], key[1], e.file)
        if e.kind == DELETE:
            if ident not in live[key]:
                raise CommitConflictError(
                    f"file {e.file.file_name} (level {e.file.level}) of bucket {e.bucket} in "
                    f"partition {list(key[0])} is no longer live at snapshot {latest.id}: "
                    "another commit compacted or overwrote it"
                )
            del live[key][ident]
    for e in entries:
        key = (tuple(e.partition.values), e.bucket)
        ident = entry_identifier(key[0], key[1], e.file)
        if e.kind == ADD:
            if ident in live[key]:
                raise CommitConflictError(f"file {e.file.file_name} would be added twice")
            live[key][ident] = e.file
    for (partition, bucket), files in live.items():
        try:
            Levels(files.values(), num_levels)
        except CorruptMetadataError as err:
            raise CommitConflictError(
                f"committing would overlap keys in bucket {bucket} of partition "
                f"{list(partition)}: {err}"
            ) from err


class _Attempt:
    """Metadata files one attempt wrote, so a lost race or a conflict can remove them."""

    def __init__(self, table: FileStoreTable):
        self.table = table
        self.names: list[str] = []

    def clean(self) -> None:
        """Delete this attempt's manifests and manifest lists."""
        base = f"{self.table.table_path.rstrip('/')}/manifest"
        for name in self.names:
            self.table.file_io.delete_quietly(f"{base}/{name}")


@dataclass(frozen=True)
class CommitRequest:
    """One snapshot to commit: its kind, its entries against a given latest, who commits it."""

    kind: str
    plan_entries: Callable[[Snapshot | None], list[ManifestEntry]]
    check: Callable[[Snapshot | None, list[ManifestEntry]], None]
    commit_user: str
    identifier: int
    new_files: Callable[[], None]
    base_manifests: Callable[[Snapshot | None], list[ManifestFileMeta]] | None = None

    def plan_base(self, table: FileStoreTable, latest: Snapshot | None) -> list[ManifestFileMeta]:
        """The new base manifest list: the latest base + delta unless the request merges them."""
        if self.base_manifests is not None:
            return self.base_manifests(latest)
        return ManifestListManager(table).read_all(latest)


def _prepare_snapshot(
    table: FileStoreTable,
    latest: Snapshot | None,
    entries: list[ManifestEntry],
    attempt: _Attempt,
    request: CommitRequest,
) -> Snapshot:
    """Write the delta manifests and both manifest lists; return the snapshot to create."""
    manifest_files = ManifestFileManager(table)
    lists = ManifestListManager(table)
    unique = uuid.uuid4()
    delta_metas = manifest_files.rolling_write(
        entries, table.options.manifest_target_size(), f"manifest-{uuid.uuid4()}"
    )
    attempt.names += [m.file_name for m in delta_metas]
    base_name, delta_name = f"manifest-list-{unique}-0", f"manifest-list-{unique}-1"
    attempt.names += [base_name, delta_name]
    base_size = lists.write(base_name, request.plan_base(table, latest))
    delta_size = lists.write(delta_name, delta_metas)
    delta_records = sum(e.file.row_count if e.kind == ADD else -e.file.row_count for e in entries)
    previous_total = (latest.total_record_count or 0) if latest else 0
    return Snapshot(
        version=3,
        id=latest.id + 1 if latest else 1,
        schema_id=table.table_schema.id,
        base_manifest_list=base_name,
        base_manifest_list_size=base_size,
        delta_manifest_list=delta_name,
        delta_manifest_list_size=delta_size,
        total_record_count=previous_total + delta_records,
        delta_record_count=delta_records,
        commit_user=request.commit_user,
        commit_identifier=request.identifier,
        commit_kind=request.kind,
        time_millis=int(time.time() * 1000),
        watermark=latest.watermark if latest else None,
        index_manifest=latest.index_manifest if latest else None,
        next_row_id=latest.next_row_id if latest else None,
        writer_version=build_full_version(),
    )


def _already_committed(
    table: FileStoreTable, after_id: int, latest: Snapshot | None, request: CommitRequest
) -> Snapshot | None:
    """After an uncertain attempt: a snapshot with our user, identifier and kind means success."""
    manager = table.snapshot_manager()
    for snapshot_id in range(after_id + 1, (latest.id if latest else 0) + 1):
        s = manager.get_snapshot_by_id(snapshot_id)
        if (
            s is not None
            and s.commit_user == request.commit_user
            and s.commit_identifier == request.identifier
            and s.commit_kind == request.kind
        ):
            return s
    return None


def backoff_seconds(retry: int) -> float:
    """10 ms doubling up to 10 s, plus 0-20% jitter, as Paimon's commit retry."""
    base = min(FIRST_BACKOFF_S * (2**retry), MAX_BACKOFF_S)
    return base * (1 + random.uniform(0, 0.2))


def commit_snapshot(
    table: FileStoreTable,
    request: CommitRequest,
    *,
    max_retries: int = MAX_RETRIES,
    snapshot_writer: SnapshotWriter = create_snapshot_if_absent,
) -> CommitOutcome:
    """Commit one snapshot atomically, or change nothing and raise.

    Each attempt plans its entries against the latest snapshot and checks them; a conflict fails
    at once. A lost snapshot race removes the attempt's metadata and retries with backoff. On
    failure the request's new data files are removed too, unless an attempt's outcome is unknown.
    """
    manager = table.snapshot_manager()
    uncertain_since: int | None = None
    try:
        for retry in range(max_retries + 1):
            latest = manager.get_latest_snapshot()
            if uncertain_since is not None:
                done = _already_committed(table, uncertain_since, latest, request)
                if done is not None:
                    return CommitOutcome(done, retry)
            entries = request.plan_entries(latest)
            request.check(latest, entries)
            attempt = _Attempt(table)
            try:
                snapshot = _prepare_snapshot(table, latest, entries, attempt, request)
            except BaseException:
                attempt.clean()
                raise
            try:
                created = snapshot_writer(
                    table.file_io,
                    manager.get_snapshot_path(snapshot.id),
                    JSON.to_json(snapshot, indent=2),
                )
            except Exception:
                log.warning(
                    "snapshot %d write failed; checking before retrying", snapshot.id, exc_info=True
                )
                uncertain_since = latest.id if latest else 0
                created = False
            else:
                if not created:
                    attempt.clean()
            if created:
                update_latest_hint(table.file_io, manager.latest_file, snapshot.id)
                log.info(
                    "committed %s snapshot %d of %s (%d entries, attempt %d)",
                    request.kind,
                    snapshot.id,
                    table.identifier.get_full_name(),
                    len(entries),
                    retry + 1,
                )
                return CommitOutcome(snapshot, retry + 1)
            log.info("lost the race for snapshot %d; retrying", snapshot.id)
            time.sleep(backoff_seconds(retry))
        raise CommitConflictError(
            f"gave up committing to {table.identifier.get_full_name()} after "
            f"{max_retries + 1} attempts: other writers kept winning the snapshot race"
        )
    except BaseException:
        if uncertain_since is None:
            request.new_files()
        else:
            log.warning(
                "an earlier snapshot write of this commit may have landed; its data files are kept "
                "and orphan removal reclaims them if it did not"
            )
        raise


def new_commit_identity(commit_user: str | None, identifier: int | None) -> tuple[str, int]:
    """A commit user and identifier: the pair that recognises our own snapshot after a retry."""
    return commit_user or str(
        uuid.uuid4()
    ), identifier if identifier is not None else time.time_ns()


def commit_compaction(
    table: FileStoreTable,
    results: Sequence[CompactResult],
    *,
    num_levels: int,
    commit_user: str | None = None,
    identifier: int | None = None,
    max_retries: int = MAX_RETRIES,
    snapshot_writer: SnapshotWriter = create_snapshot_if_absent,
) -> CommitOutcome:
    """Commit every task's changes as one COMPACT snapshot, or change nothing and raise.

    A conflict (a replaced file no longer live, overlapping keys) fails at once, as in Java.
    """
    user, ident = new_commit_identity(commit_user, identifier)
    entries = _entries(table, results)

    def check(latest: Snapshot | None, planned: list[ManifestEntry]) -> None:
        if latest is None:
            raise CommitConflictError(f"{table.identifier.get_full_name()} has no snapshot")
        check_conflicts(table, latest, planned, num_levels)

    def discard() -> None:
        for r in results:
            delete_files(table, r.partition_values, r.bucket, r.new_files)

    request = CommitRequest(COMPACT, lambda _latest: entries, check, user, ident, discard)
    return commit_snapshot(table, request, max_retries=max_retries, snapshot_writer=snapshot_writer)
