"""Deleting tags (Java's TagManager.deleteTag and TagDeletion): the tag file, then the files only
it kept alive.

Deleting a tag whose snapshot was expired deletes the data files, manifests, index and statistics
files only that tag kept alive: everything some remaining snapshot, tag, changelog or branch
references is kept (a superset of Java's neighbour-based skipping sets). The tag file goes first,
as in Java: a run that dies midway leaves orphan files, never a tag pointing at deleted files.

A run deleting several tags plans each as if the earlier ones were gone (its dry run); executing
plans each again just before deleting it, so a commit or tag that appeared meanwhile is kept.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from dagster_paimon.errors import MaintenanceAbortedError
from dagster_paimon.format.metadata import Snapshot
from dagster_paimon.maintenance.deletion import (
    data_paths,
    lists_named,
    metadata_to_delete,
    unused,
    used_by_latest,
)
from dagster_paimon.maintenance.references import CHANGELOG, Referrer, referrers
from dagster_paimon.maintenance.tag_files import read_tags, tag_path
from dagster_paimon.maintenance.tag_results import TagInfo, TagResult
from dagster_paimon.maintenance.tag_success import notify_deletion
from dagster_paimon.snapshot.metadata import TAG_PREFIX, TableMetadata
from dagster_paimon.storage.files import delete_logged

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TagDeletionPlan:
    """The tag to delete and the files only it kept alive."""

    tag: TagInfo
    data_files: tuple[str, ...] = ()
    metadata_files: tuple[str, ...] = ()


@dataclass(frozen=True)
class TagRemovalPlan:
    """The tags a run deletes, in order, each planned as if the earlier ones were gone."""

    table: str
    operation: str
    deletions: tuple[TagDeletionPlan, ...]
    success_file: bool

    def preview(self) -> TagResult:
        """What executing the plan would delete."""
        return TagResult(
            table=self.table,
            operation=self.operation,
            deleted=tuple(d.tag.name for d in self.deletions),
            deleted_data_files=sum(len(d.data_files) for d in self.deletions),
            deleted_metadata_files=sum(len(d.metadata_files) for d in self.deletions),
            dry_run=True,
        )


def plan_tag_deletion(
    meta: TableMetadata, tag: TagInfo, gone: frozenset[str] = frozenset()
) -> TagDeletionPlan:
    """TagManager.deleteTag's plan; `gone` names tags deleted earlier in the same run."""
    others = [t for t in read_tags(meta) if t.name != tag.name and t.name not in gone]
    if meta.file_io.exists(meta.snapshot_path(tag.snapshot_id)) or any(
        t.snapshot_id == tag.snapshot_id for t in others
    ):
        return TagDeletionPlan(tag)  # the snapshot or another tag keeps every file
    snapshot = meta.read_json(tag_path(meta, tag.name), Snapshot)
    if snapshot is None:
        return TagDeletionPlan(tag)
    dropped = {TAG_PREFIX + name for name in (*gone, tag.name)}
    refs = [
        r
        for branch in meta.branches()
        for r in referrers(meta, branch)
        if not (branch is meta.main and r.kind == "tag" and r.key in dropped)
    ]
    used = _used_by(meta, refs)
    try:
        live = meta.live_refs(snapshot)
    except FileNotFoundError as e:
        log.warning("cannot read the files of tag %s (%s); deleting only its file", tag.name, e)
        return TagDeletionPlan(tag)
    data = data_paths(meta, live, used)
    metadata = metadata_to_delete(
        meta, [snapshot], used, lists_of=lists_named(data_lists=True, changelog_lists=False)
    )
    return TagDeletionPlan(tag, tuple(data), tuple(metadata))


def _used_by(meta: TableMetadata, refs: list[Referrer]) -> set[str]:
    """Names TagDeletion's skipping sets hold: the live data files and every metadata file of
    each remaining snapshot and tag (any branch), and every file a long-lived changelog names.

    A file only a retained DELETE entry names is not live: readers never open it, and Java's
    tag deletion removes it too. Missing metadata of a remaining root aborts (never guess).
    """
    used: set[str] = set()
    for ref in refs:
        snapshot = meta.read_json(ref.path, Snapshot)
        if snapshot is None:
            continue  # removed meanwhile
        try:
            if ref.kind == CHANGELOG:
                names, manifests = meta.metadata_files(snapshot, missing_ok=True)
                used |= {
                    n
                    for m in manifests
                    for r in meta.manifest_refs(m)
                    for n in (r.file_name, *r.extra_files)
                }
            else:
                names, _ = meta.metadata_files(snapshot)
                used |= {r.file_name for r in meta.live_refs(snapshot)}
        except FileNotFoundError as e:
            raise MaintenanceAbortedError(
                f"{ref.kind} {ref.key} of branch {ref.branch.name} references missing {e}; "
                "cannot tell which files the tag alone keeps"
            ) from e
        used |= names
    return used


def execute_tag_deletion(
    meta: TableMetadata, plan: TagDeletionPlan, success_file: bool
) -> tuple[int, int]:
    """The success file, the tag file (as Java), then files a concurrent commit did not start
    using; (data, metadata) files deleted."""
    name = plan.tag.name
    if success_file:
        notify_deletion(meta, name)
    meta.files.delete_files([tag_path(meta, name)])
    if not plan.data_files and not plan.metadata_files:
        return 0, 0
    in_use = used_by_latest(meta)
    data = delete_logged(meta.files, unused(plan.data_files, in_use, "data files"), "data files")
    metadata = delete_logged(
        meta.files, unused(plan.metadata_files, in_use, "metadata files"), "metadata files"
    )
    return data, metadata


@dataclass
class TagDeleter:
    """Deletes tags one after another (or, dry, plans each as if the earlier ones were gone)."""

    meta: TableMetadata
    dry_run: bool
    success_file: bool
    deleted: list[str] = field(default_factory=list)
    data: int = 0
    metadata: int = 0

    def delete(self, tag: TagInfo, *, notify: bool = True) -> None:
        """notify False: Java deletes the tag file without its callbacks (success file kept)."""
        plan = plan_tag_deletion(self.meta, tag, frozenset(self.deleted))
        if self.dry_run:
            data, metadata = len(plan.data_files), len(plan.metadata_files)
        else:
            data, metadata = execute_tag_deletion(self.meta, plan, self.success_file and notify)
        log.info("%sdeleted tag %s", "(dry run) " if self.dry_run else "", tag.name)
        self.deleted.append(tag.name)
        self.data += data
        self.metadata += metadata

    def result(self, table: str, operation: str, created: Sequence[str] = ()) -> TagResult:
        """What the run created and deleted."""
        return TagResult(
            table=table,
            operation=operation,
            created=tuple(created),
            deleted=tuple(self.deleted),
            deleted_data_files=self.data,
            deleted_metadata_files=self.metadata,
            dry_run=self.dry_run,
        )


def plan_tag_removal(
    meta: TableMetadata, table: str, operation: str, tags: Iterable[TagInfo], success_file: bool
) -> TagRemovalPlan:
    """Plan deleting `tags` in order, each as if the earlier ones were gone; reads only."""
    plans: list[TagDeletionPlan] = []
    for tag in tags:
        plans.append(plan_tag_deletion(meta, tag, frozenset(p.tag.name for p in plans)))
    return TagRemovalPlan(table, operation, tuple(plans), success_file)


def execute_tag_removal(meta: TableMetadata, plan: TagRemovalPlan) -> TagResult:
    """Delete the plan's tags in order, each planned again against the table as it is now."""
    deleter = TagDeleter(meta, dry_run=False, success_file=plan.success_file)
    for deletion in plan.deletions:
        deleter.delete(deletion.tag)
    return deleter.result(plan.table, plan.operation)


def expired_tags(tags: Iterable[TagInfo], now: datetime) -> list[TagInfo]:
    """TagTimeExpire: the tags whose tagCreateTime + tagTimeRetained is before now."""
    return [
        t
        for t in tags
        if t.tag_create_time is not None
        and t.time_retained is not None
        and now > t.tag_create_time + t.time_retained
    ]
