"""Rollback to a snapshot, a tag or a point in time (Java's rollback_to procedures): plan, execute.

As Java's `RollbackHelper` (release-2.0.0) does, a rollback to snapshot N removes every
snapshot after N, every long-lived changelog after N and every tag on a snapshot after N; a
rollback to a tag whose snapshot has expired first writes that snapshot back from the tag (and
points EARLIEST at it). Consumers are left as they are. Java 2.0 leaves the data files and
manifests only the removed snapshots, changelogs and tags used for orphan removal; we delete
them here, through expiry's deletion machinery, keeping every file a remaining snapshot,
changelog, tag or branch names.

Crash safety, step by step: the restored snapshot (if any) is created first (it is older than
the latest, so readers do not see it); then LATEST is pointed at the target; then the
snapshots go newest first, so at any moment the remaining snapshots are a complete prefix of
the history and LATEST never names a removed snapshot (a reader that finds the snapshot after
the hint lists the directory, see snapshot/resolve.py); then changelogs and tags; files
last, when nothing references them. A run killed midway leaves a readable table; running the
same rollback again finishes it, and orphan removal reclaims files a killed run had not yet
deleted.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

from dagster_paimon.errors import (
    CorruptFileError,
    InvalidArgumentError,
    SnapshotNotFoundError,
    TagNotFoundError,
)
from dagster_paimon.failpoints import ROLLBACK_LATEST_MOVED, ROLLBACK_RECORDS_REMOVED, failpoint
from dagster_paimon.format.metadata import Snapshot, Tag
from dagster_paimon.format.table import FileStoreTable
from dagster_paimon.format.values import JSON
from dagster_paimon.maintenance.context import DEFAULT_CONTEXT, MaintenanceContext, table_name
from dagster_paimon.maintenance.deletion import changelog_lists, lists_named, metadata_to_delete
from dagster_paimon.maintenance.guard import Seen, check_unchanged, seen
from dagster_paimon.maintenance.references import CHANGELOG, Referrer, collect_used, referrers
from dagster_paimon.results import DETAIL, METRIC, Reported, run_planned
from dagster_paimon.snapshot.metadata import (
    CHANGELOG_PREFIX,
    EARLIEST,
    LATEST,
    SNAPSHOT_PREFIX,
    TAG_PREFIX,
    FileRef,
    TableMetadata,
)
from dagster_paimon.storage.files import TableFiles, delete_logged
from dagster_paimon.storage.snapshots import replace_file
from dagster_paimon.unsupported import ROLLBACK, check_supported_layout

log = logging.getLogger(__name__)


@dataclass(frozen=True, kw_only=True)
class RollbackResult(Reported):
    """What a rollback removed (or, dry, would remove)."""

    table: str
    target_snapshot: int
    target_of: str
    previous_latest: int
    removed_snapshots: tuple[int, ...]
    removed_changelogs: tuple[int, ...]
    removed_tags: tuple[str, ...]
    restored_from_tag: str | None
    deleted_data_files: int
    deleted_metadata_files: int
    dry_run: bool
    seconds: float = 0.0

    FIELDS = {
        "table": DETAIL,
        "target_snapshot": METRIC,
        "target_of": DETAIL,
        "previous_latest": METRIC,
        "removed_snapshots": METRIC,
        "removed_changelogs": METRIC,
        "removed_tags": METRIC,
        "restored_from_tag": DETAIL,
        "deleted_data_files": METRIC,
        "deleted_metadata_files": METRIC,
        "dry_run": DETAIL,
        "seconds": METRIC,
    }

    def summary(self) -> str:
        """One human line."""
        removes = self.removed_snapshots or self.removed_changelogs or self.removed_tags
        if not removes and self.restored_from_tag is None:
            return f"{self.table}: already at snapshot {self.target_snapshot} ({self.target_of})"
        verb = "would roll back" if self.dry_run else "rolled back"
        parts = [f"{len(self.removed_snapshots)} snapshots"]
        if self.removed_changelogs:
            parts.append(f"{len(self.removed_changelogs)} changelogs")
        if self.removed_tags:
            parts.append(f"tags {', '.join(self.removed_tags)}")
        restored = (
            f", snapshot restored from tag {self.restored_from_tag}"
            if self.restored_from_tag
            else ""
        )
        return (
            f"{self.table}: {verb} from snapshot {self.previous_latest} to {self.target_snapshot} "
            f"({self.target_of}): removing {', '.join(parts)}, {self.deleted_data_files} data "
            f"and {self.deleted_metadata_files} metadata files{restored}"
        )


@dataclass(frozen=True)
class RollbackPlan:
    """The snapshot to return to and everything after it that goes."""

    table: str
    target: int
    target_of: str
    previous_latest: int
    snapshot_ids: tuple[int, ...]
    changelog_ids: tuple[int, ...]
    tags: tuple[str, ...]
    restore: Snapshot | None
    restored_from_tag: str | None
    data_files: tuple[str, ...]
    metadata_files: tuple[str, ...]
    seen: Seen = field(default_factory=Seen)

    def preview(self) -> RollbackResult:
        """What executing the plan would do."""
        return RollbackResult(
            table=self.table,
            target_snapshot=self.target,
            target_of=self.target_of,
            previous_latest=self.previous_latest,
            removed_snapshots=self.snapshot_ids,
            removed_changelogs=self.changelog_ids,
            removed_tags=self.tags,
            restored_from_tag=self.restored_from_tag,
            deleted_data_files=len(self.data_files),
            deleted_metadata_files=len(self.metadata_files),
            dry_run=True,
        )


def _ms(timestamp: datetime) -> int:
    """Epoch milliseconds of a datetime; a naive one is taken as UTC."""
    if not isinstance(timestamp, datetime):
        raise InvalidArgumentError(f"timestamp must be a datetime, got {timestamp!r}")
    if timestamp.tzinfo is None:
        timestamp = timestamp.replace(tzinfo=UTC)
    return int(timestamp.timestamp() * 1000)


def _tag(meta: TableMetadata, name: str) -> Snapshot | None:
    """A tag's snapshot, or None if there is no such tag."""
    found = meta.read_json(f"{meta.main.dir('tag')}/{TAG_PREFIX}{name}", Tag)
    return found.trim_to_snapshot() if found is not None else None


def _target(
    meta: TableMetadata,
    ids: list[int],
    snapshot_id: int | None,
    tag: str | None,
    timestamp: datetime | None,
) -> tuple[int, str, Snapshot | None, str | None]:
    """(target id, how it was named, the snapshot to restore from a tag or None, that tag)."""
    name = table_name(meta.table)
    present = set(ids)
    if tag is not None:
        tagged = _tag(meta, tag)
        if tagged is None:
            raise TagNotFoundError(f"tag {tag!r} of {name} does not exist; nothing was changed")
        if tagged.id in present:
            return tagged.id, f"tag {tag}", None, None
        return tagged.id, f"tag {tag}", tagged, tag
    if snapshot_id is not None:
        if snapshot_id in present:
            return snapshot_id, f"snapshot {snapshot_id}", None, None
        # Java: an expired snapshot some tag still holds is rolled back to through the tag
        for tag_name, tagged in meta.tags():
            if tagged.id == snapshot_id:
                return snapshot_id, f"snapshot {snapshot_id}", tagged, tag_name
        raise SnapshotNotFoundError(
            f"snapshot {snapshot_id} of {name} does not exist (never written, or expired, and "
            "no tag holds it); nothing was changed"
        )
    assert timestamp is not None
    ms = _ms(timestamp)
    at_or_before = [s for s in meta.snapshots(ids) if s.time_millis <= ms]
    if not at_or_before:
        raise SnapshotNotFoundError(
            f"{name} has no snapshot at or before {timestamp.isoformat()}; nothing was changed"
        )
    found = at_or_before[-1].id
    return found, f"the snapshot at or before {timestamp.isoformat()}", None, None


def _refs(meta: TableMetadata, roots: Sequence[tuple[Snapshot, bool]]) -> list[FileRef]:
    """Every file entry of the roots' manifests (changelog roots: only their changes);
    missing or unreadable metadata yields nothing (orphan removal reclaims what it named)."""
    refs: list[FileRef] = []
    for snapshot, changelog_only in roots:
        for lst in meta.root_lists(snapshot, changelog_only=changelog_only):
            try:
                for manifest, _ in meta.manifest_list(lst):
                    refs += meta.manifest_refs(manifest)
            except (FileNotFoundError, CorruptFileError) as e:
                log.warning("cannot read %s of removed snapshot %d: %s", lst, snapshot.id, e)
    return refs


def _files(
    meta: TableMetadata,
    target: int,
    removed: list[Snapshot],
    changelogs: list[Snapshot],
    tags: list[tuple[str, Snapshot]],
) -> tuple[list[str], list[str]]:
    """(data paths, metadata paths) that only what the rollback removes names: every file of
    the removed roots that no remaining snapshot, changelog, tag or branch names."""
    gone_tags = {f"{TAG_PREFIX}{n}" for n, _ in tags}

    def stays(ref: Referrer) -> bool:
        if ref.branch.name != meta.main.name:
            return True
        if ref.kind == "tag":
            return ref.key not in gone_tags
        return int(ref.key) <= target

    kept = [r for b in meta.branches() for r in referrers(meta, b) if stays(r)]
    used = collect_used(meta, kept)
    roots = [(s, False) for s in (*removed, *(t for _, t in tags))]
    roots += [(c, True) for c in changelogs]
    data: dict[str, None] = {}
    for ref in _refs(meta, roots):
        if ref.file_name not in used:
            data.update(dict.fromkeys(meta.data_paths(ref)))
    lists_of = lists_named(data_lists=True, changelog_lists=True)
    snapshots = [*removed, *(t for _, t in tags)]
    metadata = metadata_to_delete(meta, snapshots, used.names, lists_of=lists_of)
    metadata += metadata_to_delete(
        meta, changelogs, used.names, lists_of=changelog_lists, index=False
    )
    return list(data), list(dict.fromkeys(metadata))


def plan_rollback(
    table: FileStoreTable,
    *,
    snapshot_id: int | None = None,
    tag: str | None = None,
    timestamp: datetime | None = None,
    context: MaintenanceContext = DEFAULT_CONTEXT,
) -> RollbackPlan:
    """What rolling back to exactly one of a snapshot id, a tag or a time removes; reads only.

    Raises InvalidArgumentError (not exactly one target, a malformed one), SnapshotNotFoundError
    (the snapshot never existed or expired and no tag holds it; no snapshot at or before the
    time), TagNotFoundError; not input: MaintenanceAbortedError (metadata a remaining snapshot
    needs is missing), TransientStoreError.
    """
    check_supported_layout(table.table_schema, operation=ROLLBACK)
    given = [x for x in (snapshot_id, tag, timestamp) if x is not None]
    if len(given) != 1:
        raise InvalidArgumentError("give exactly one of snapshot_id, tag or timestamp")
    if snapshot_id is not None and (
        isinstance(snapshot_id, bool) or not isinstance(snapshot_id, int) or snapshot_id < 1
    ):
        raise InvalidArgumentError(f"snapshot_id must be an int >= 1, got {snapshot_id!r}")
    if tag is not None and (not isinstance(tag, str) or not tag or "/" in tag):
        raise InvalidArgumentError(f"tag must be a tag name, got {tag!r}")
    meta = context.metadata(table)
    name = table_name(table)
    ids = meta.ids(meta.main.dir("snapshot"), SNAPSHOT_PREFIX)
    if not ids:
        raise SnapshotNotFoundError(f"{name} has no snapshots to roll back; nothing was changed")
    target, target_of, restore, restored_from = _target(meta, ids, snapshot_id, tag, timestamp)
    removed_ids = [i for i in ids if i > target]
    changelog_ids = [i for i in meta.ids(meta.main.dir(CHANGELOG), CHANGELOG_PREFIX) if i > target]
    all_tags = meta.tags()
    removed_tags = [(n, s) for n, s in all_tags if s.id > target]
    removed = meta.snapshots(removed_ids)
    changelogs = meta.changelogs(changelog_ids)
    data, metadata = _files(meta, target, removed, changelogs, removed_tags)
    return RollbackPlan(
        table=name,
        target=target,
        target_of=target_of,
        previous_latest=ids[-1],
        snapshot_ids=tuple(sorted(removed_ids, reverse=True)),
        changelog_ids=tuple(sorted(changelog_ids, reverse=True)),
        tags=tuple(n for n, _ in removed_tags),
        restore=restore,
        restored_from_tag=restored_from,
        data_files=tuple(data),
        metadata_files=tuple(metadata),
        seen=seen(meta, all_tags, ids),
    )


def drop_newest_snapshots(
    meta: TableMetadata, files: TableFiles, latest: int, removing: Sequence[int]
) -> None:
    """Point LATEST at `latest`, then delete the `removing` snapshots newest first.

    The one way the rollback and the doctor's repair remove snapshots: a reader never follows
    LATEST to a removed snapshot (the hint moves first, and must not fail), and a run that dies
    midway leaves a contiguous history that a rerun finishes.
    """
    directory = meta.main.dir("snapshot")
    replace_file(meta.file_io, f"{directory}/{LATEST}", str(latest))
    failpoint(ROLLBACK_LATEST_MOVED)
    for i in sorted(removing, reverse=True):
        files.delete_files([meta.snapshot_path(i)])


def execute_rollback(
    table: FileStoreTable, plan: RollbackPlan, *, context: MaintenanceContext = DEFAULT_CONTEXT
) -> RollbackResult:
    """Carry out a rollback plan in the crash-safe order of the module docstring.

    Raises StaleMaintenancePlanError (a commit, tag or branch appeared since planning; nothing
    is changed), TransientStoreError.
    """
    start = time.perf_counter()
    store = context.table_files(table)
    meta = TableMetadata(table, store)
    check_unchanged(
        meta, plan.seen, latest=True, same_tags_and_branches=True, then="roll back again"
    )
    snapshot_dir = meta.main.dir("snapshot")
    if plan.restore is not None:
        text = JSON.to_json(plan.restore, indent=2)
        context.snapshot_writer(meta.file_io, meta.snapshot_path(plan.target), text)
    if plan.snapshot_ids or plan.restore is not None:
        drop_newest_snapshots(meta, store, plan.target, plan.snapshot_ids)
    if plan.restore is not None:
        remaining = meta.ids(snapshot_dir, SNAPSHOT_PREFIX)
        meta.write_hint(snapshot_dir, EARLIEST, remaining[0] if remaining else plan.target)
    if plan.changelog_ids:
        changelog_dir = meta.main.dir(CHANGELOG)
        left = [
            i for i in meta.ids(changelog_dir, CHANGELOG_PREFIX) if i not in set(plan.changelog_ids)
        ]
        # Java writes -1 when no long-lived changelog is left
        meta.write_hint(changelog_dir, LATEST, left[-1] if left else -1)
        delete_logged(store, [meta.changelog_path(i) for i in plan.changelog_ids], "changelogs")
    tag_dir = meta.main.dir("tag")
    delete_logged(store, [f"{tag_dir}/{TAG_PREFIX}{n}" for n in plan.tags], "tags")
    failpoint(ROLLBACK_RECORDS_REMOVED)
    deleted_data = delete_logged(store, plan.data_files, "data files")
    deleted_metadata = delete_logged(store, plan.metadata_files, "metadata files")
    log.info(
        "rolled back %s from snapshot %d to %d: %d snapshots, %d changelogs, %d tags, "
        "%d data and %d metadata files removed",
        plan.table,
        plan.previous_latest,
        plan.target,
        len(plan.snapshot_ids),
        len(plan.changelog_ids),
        len(plan.tags),
        deleted_data,
        deleted_metadata,
    )
    return replace(
        plan.preview(),
        deleted_data_files=deleted_data,
        deleted_metadata_files=deleted_metadata,
        dry_run=False,
        seconds=time.perf_counter() - start,
    )


def rollback_to(
    table: FileStoreTable,
    *,
    snapshot_id: int | None = None,
    tag: str | None = None,
    timestamp: datetime | None = None,
    dry_run: bool = False,
    context: MaintenanceContext = DEFAULT_CONTEXT,
) -> RollbackResult:
    """Roll the table back to exactly one of: a snapshot id, a tag, or the newest snapshot
    committed at or before a time (a naive datetime is UTC).

    Raises InvalidArgumentError, SnapshotNotFoundError, TagNotFoundError (nothing changed);
    not input: StaleMaintenancePlanError (the table changed meanwhile; nothing changed),
    MaintenanceAbortedError, TransientStoreError.
    """
    return run_planned(
        lambda: plan_rollback(
            table, snapshot_id=snapshot_id, tag=tag, timestamp=timestamp, context=context
        ),
        lambda plan: execute_rollback(table, plan, context=context),
        dry_run=dry_run,
    )
