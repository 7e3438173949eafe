"""The one commit loop: a snapshot producer plans entries, checks conflicts, creates snapshot-N.

In the style of pyiceberg's _SnapshotProducer: each operation is a small subclass naming the
entries it deletes and adds, its conflict check, its base manifests, its index manifest and its
clean-up; the loop around them (Java's FileStoreCommitImpl.tryCommit) exists once.
"""

from __future__ import annotations

import logging
import random
import time
import uuid
from dataclasses import dataclass
from typing import ClassVar

from dagster_paimon.commit.carried import inherited_statistics, snapshot_properties
from dagster_paimon.commit.manifest_merge import (
    EntryReader,
    ManifestMergeOptions,
    ManifestWriter,
    RollingManifestWriter,
    merge_manifests,
)
from dagster_paimon.commit.users import new_commit_user
from dagster_paimon.errors import CommitConflictError, transient_cause
from dagster_paimon.failpoints import (
    AFTER_SNAPSHOT,
    BEFORE_SNAPSHOT,
    MANIFEST_LIST_WRITTEN,
    MANIFESTS_WRITTEN,
    failpoint,
)
from dagster_paimon.format.manifest import (
    ManifestEntry,
    ManifestFileMeta,
    TableManifests,
)
from dagster_paimon.format.metadata import Snapshot, new_snapshot
from dagster_paimon.format.table import FileStoreTable
from dagster_paimon.format.values import JSON
from dagster_paimon.io.filekind import ADD
from dagster_paimon.snapshot.collector import collector_paused
from dagster_paimon.snapshot.entries import live_entries
from dagster_paimon.snapshot.resolve import find_landed, resolve_snapshot
from dagster_paimon.storage.snapshots import (
    SnapshotWriter,
    create_snapshot_if_absent,
    update_latest_hint,
)

log = logging.getLogger(__name__)

MAX_RETRIES = 10
FIRST_BACKOFF_S = 0.01
MAX_BACKOFF_S = 10.0
SNAPSHOT_VERSION = 3


@dataclass(frozen=True)
class CommitOutcome:
    """The snapshot a commit produced and how many attempts it took."""

    snapshot: Snapshot
    attempts: int


def backoff_seconds(retry: int) -> float:
    """10 ms doubling up to 10 s, plus 0-20% jitter, as Paimon's commit retry."""
    base = min(FIRST_BACKOFF_S * (2**retry), MAX_BACKOFF_S)
    return base * (1 + random.uniform(0, 0.2))


class _Attempt:
    """Metadata files one attempt wrote, so a lost race or a conflict can remove them."""

    def __init__(self, table: FileStoreTable):
        self.table = table
        self.names: list[str] = []

    def clean(self) -> None:
        """Delete this attempt's manifests and manifest lists (once)."""
        base = f"{self.table.table_path.rstrip('/')}/manifest"
        for name in self.names:
            self.table.file_io.delete_quietly(f"{base}/{name}")
        self.names = []


class SnapshotProducer:
    """One snapshot of one operation; subclasses override the steps that differ.

    Every step that reads the table receives the latest snapshot of the attempt, so a retry
    after a lost race re-plans against what another committer just landed.
    """

    kind: ClassVar[str]
    # what the default commit user names (new_commit_user): "compact", "rescale", ...
    operation: ClassVar[str]
    # whether committing the same change twice leaves the table as committing it once (a
    # compaction does; an append to an aggregation table does not)
    idempotent: ClassVar[bool] = True

    def __init__(
        self,
        table: FileStoreTable,
        *,
        commit_user: str | None = None,
        identifier: int | None = None,
        max_retries: int = MAX_RETRIES,
        snapshot_writer: SnapshotWriter = create_snapshot_if_absent,
    ):
        self.table = table
        self.commit_user = commit_user or new_commit_user(self.operation)
        self.identifier = identifier if identifier is not None else time.time_ns()
        self.max_retries = max_retries
        self.snapshot_writer = snapshot_writer
        self._live: tuple[int | None, bool, list[ManifestEntry]] | None = None
        # manifests never change: a retry re-merging the new latest reads only the new ones
        self._merge_reader = EntryReader(table)

    @property
    def table_name(self) -> str:
        """'db.table', for messages."""
        return str(self.table.identifier.get_full_name())

    def live(self, latest: Snapshot | None, *, with_stats: bool = False) -> list[ManifestEntry]:
        """Live entries of `latest`, read once per attempt's snapshot."""
        key = (latest.id if latest else None, with_stats)
        if self._live is None or self._live[:2] != key:
            self._live = (*key, live_entries(self.table, latest, with_stats=with_stats))
        return self._live[2]

    def deleted_entries(self, latest: Snapshot | None) -> list[ManifestEntry]:
        """DELETE entries of the files this snapshot removes."""
        return []

    def added_entries(self, latest: Snapshot | None) -> list[ManifestEntry]:
        """ADD entries of the files this snapshot adds."""
        return []

    def replan(self, latest: Snapshot | None) -> None:
        """Re-plan the files this operation wrote for `latest`, before its entries are planned."""

    def check(self, latest: Snapshot | None, entries: list[ManifestEntry]) -> None:
        """Raise CommitConflictError if the entries cannot go on top of `latest`."""

    def base_manifests(
        self, latest: Snapshot | None, writer: ManifestWriter
    ) -> list[ManifestFileMeta]:
        """The new base list: the latest base + delta merged as Paimon's commit merges them
        (FileStoreCommitImpl.tryCommitOnce), so reads do not grow with the table's history."""
        if latest is None:
            return []
        inputs = TableManifests(self.table).all(latest)
        outcome = merge_manifests(
            inputs,
            self._merge_reader,
            writer,
            ManifestMergeOptions.from_table_options(self.table.table_schema.options),
            partitioned=bool(self.table.partition_keys),
        )
        if outcome.mode is not None:
            log.info(
                "%s manifest merge at commit: %d -> %d manifests",
                outcome.mode,
                len(inputs),
                len(outcome.manifests),
            )
        return outcome.manifests

    def index_manifest(self, latest: Snapshot | None) -> str | None:
        """The new snapshot's index manifest: the latest one, unchanged."""
        return latest.index_manifest if latest else None

    def changelog_entries(self, latest: Snapshot | None) -> list[ManifestEntry]:
        """ADD entries of the changelog files this snapshot publishes."""
        return []

    def discard(self) -> None:
        """Remove the files this operation wrote; it will not be committed."""

    def is_empty(self, latest: Snapshot | None) -> bool:
        """Whether committing would change nothing (no snapshot is then written)."""
        return not self.deleted_entries(latest) and not self.added_entries(latest)

    def _prepare(
        self, latest: Snapshot | None, entries: list[ManifestEntry], attempt: _Attempt
    ) -> Snapshot:
        """Write manifests, then the lists naming them: nothing names a file before it exists."""
        manifests = TableManifests(self.table)
        target_size = self.table.options.manifest_target_size()
        merged = RollingManifestWriter(self.table, target_size)
        try:
            base_metas = self.base_manifests(latest, merged)
        finally:
            attempt.names += merged.written
        delta_metas = manifests.write(entries, target_size)
        attempt.names += [m.file_name for m in delta_metas]
        failpoint(MANIFESTS_WRITTEN)
        unique = uuid.uuid4()
        base_name, delta_name = f"manifest-list-{unique}-0", f"manifest-list-{unique}-1"
        attempt.names += [base_name, delta_name]
        base_size = manifests.write_list(base_name, base_metas)
        delta_size = manifests.write_list(delta_name, delta_metas)
        failpoint(MANIFEST_LIST_WRITTEN)
        index_manifest = self.index_manifest(latest)
        if index_manifest is not None and index_manifest != (
            latest.index_manifest if latest else None
        ):  # a new index manifest (None only ever carries the latest's absence forward)
            attempt.names.append(index_manifest)
        changelog = self.changelog_entries(latest)
        changelog_list, changelog_size, changelog_records = None, None, None
        if changelog:
            changelog_metas = manifests.write(changelog, target_size)
            attempt.names += [m.file_name for m in changelog_metas]
            changelog_list = f"manifest-list-{unique}-2"
            attempt.names.append(changelog_list)
            changelog_size = manifests.write_list(changelog_list, changelog_metas)
            changelog_records = sum(e.file.row_count for e in changelog)
        delta_records = sum(
            e.file.row_count if e.kind == ADD else -e.file.row_count for e in entries
        )
        previous_total = (latest.total_record_count or 0) if latest else 0
        return new_snapshot(
            version=SNAPSHOT_VERSION,
            id=latest.id + 1 if latest else 1,
            schema_id=self.table.table_schema.id,
            base_manifest_list=base_name,
            base_manifest_list_size=base_size,
            delta_manifest_list=delta_name,
            delta_manifest_list_size=delta_size,
            changelog_manifest_list=changelog_list,
            changelog_manifest_list_size=changelog_size,
            changelog_record_count=changelog_records,
            total_record_count=previous_total + delta_records,
            delta_record_count=delta_records,
            commit_user=self.commit_user,
            commit_identifier=self.identifier,
            commit_kind=self.kind,
            time_millis=int(time.time() * 1000),
            watermark=latest.watermark if latest else None,
            statistics=inherited_statistics(self.table, latest),
            properties=snapshot_properties(self.table, latest, entries),
            index_manifest=index_manifest,
            next_row_id=latest.next_row_id if latest else None,
        )

    def commit(self) -> CommitOutcome:
        """Commit one snapshot atomically, or change nothing and raise.

        Each attempt re-plans the operation's own files and plans its entries against the
        latest snapshot, then checks them; a conflict fails at once. A lost snapshot race
        (another writer's snapshot under our id, storage/create.py) removes the attempt's
        metadata and retries with backoff. A snapshot write whose outcome stays unknown ends
        the loop, as in Java: if no snapshot of this commit is found, the error is raised with
        every file kept (orphan removal reclaims them if it never lands). On any other failure
        the operation's new files are removed too. docs/object-stores.md walks through it.
        """
        manager = self.table.snapshot_manager()
        uncertain = False
        try:
            for retry in range(self.max_retries + 1):
                latest = resolve_snapshot(self.table, None)  # the hint, as Java reads it
                attempt = _Attempt(self.table)
                with collector_paused():
                    self.replan(latest)
                    entries = self.deleted_entries(latest) + self.added_entries(latest)
                    self.check(latest, entries)
                    try:
                        snapshot = self._prepare(latest, entries, attempt)
                    except BaseException:
                        attempt.clean()
                        raise
                failpoint(BEFORE_SNAPSHOT)
                try:
                    created = self.snapshot_writer(
                        self.table.file_io,
                        manager.get_snapshot_path(snapshot.id),
                        JSON.to_json(snapshot, indent=2),
                    )
                except Exception:
                    uncertain = True
                    log.warning("snapshot %d: outcome unknown; looking for it", snapshot.id)
                    done = find_landed(
                        self.table,
                        self.commit_user,
                        self.identifier,
                        after=latest.id if latest else 0,
                        kind=self.kind,
                    )
                    if done is None:
                        raise
                    return self._committed(done, len(entries), retry + 1)
                if created:
                    failpoint(AFTER_SNAPSHOT)
                    return self._committed(snapshot, len(entries), retry + 1)
                attempt.clean()
                log.info("lost the race for snapshot %d; retrying", snapshot.id)
                time.sleep(backoff_seconds(retry))
            raise CommitConflictError(
                f"gave up committing to {self.table_name} after {self.max_retries + 1} "
                "attempts: other writers kept winning the snapshot race"
            )
        except BaseException as e:
            if not uncertain:
                self.discard()
            else:
                log.warning(
                    "the snapshot of this commit may yet land; its files are kept and orphan "
                    "removal reclaims them if it does not"
                )
            transient = transient_cause(e)
            if transient is not None:
                check = ""
                if uncertain and not self.idempotent:
                    check = (
                        f"look in {self.table_name}'s snapshot/ directory for a snapshot whose "
                        f"commitUser is {self.commit_user}: if there is one, this write is "
                        "committed and running it again would apply it twice"
                    )
                transient.judge(None if uncertain else True, before_retrying=check)
            raise

    def _committed(self, snapshot: Snapshot, entries: int, attempts: int) -> CommitOutcome:
        """Point the LATEST hint at our snapshot and report it."""
        manager = self.table.snapshot_manager()
        update_latest_hint(self.table.file_io, manager.latest_file, snapshot.id)
        log.info(
            "committed %s snapshot %d of %s (%d entries, attempt %d)",
            self.kind,
            snapshot.id,
            self.table_name,
            entries,
            attempts,
        )
        return CommitOutcome(snapshot, attempts)
