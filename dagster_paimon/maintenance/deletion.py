"""What expiring snapshots or changelogs free: Java's FileDeletionBase, as a plan of paths."""

from __future__ import annotations

import bisect
import logging
from collections.abc import Callable, Sequence

from dagster_paimon.format.metadata import Snapshot
from dagster_paimon.format.table import bucket_index_path
from dagster_paimon.io.filekind import ADD, DELETE
from dagster_paimon.snapshot.lists import snapshot_lists
from dagster_paimon.snapshot.metadata import APPEND_SOURCE, SNAPSHOT_PREFIX, FileRef, TableMetadata
from dagster_paimon.storage.pool import parallel_map

log = logging.getLogger(__name__)


def _try(read: Callable[[str], list], name: str | None, what: str) -> list | None:
    """Read one metadata file; None (and a warning) if it is missing or unreadable."""
    if not name:
        return []
    try:
        return read(name)
    except Exception as e:
        log.warning("cannot read %s %s: %s", what, name, e)
        return None


def _path_key(ref: FileRef) -> tuple:
    """Where a file lives: an upgrade re-ADDs the same path at another level."""
    return (ref.partition, ref.bucket, ref.file_name, ref.external_path)


def deleted_in_deltas(
    meta: TableMetadata, snapshots: Sequence[Snapshot]
) -> dict[int, list[FileRef] | None]:
    """Per snapshot: files its delta DELETEs and does not re-ADD; None if a manifest is unreadable.

    An unreadable delta cancels that snapshot's data deletions (as Java does): a crashed
    expiry may already have removed its manifests, and guessing could delete live files.
    """
    lists = parallel_map(
        lambda s: _try(meta.manifest_list, s.delta_manifest_list, "manifest list"), snapshots
    )
    names = sorted({m for lst in lists if lst for m, _ in lst})
    read = dict(
        zip(
            names,
            parallel_map(lambda m: _try(meta.manifest_refs, m, "manifest"), names),
            strict=True,
        )
    )
    result: dict[int, list[FileRef] | None] = {}
    for snapshot, lst in zip(snapshots, lists, strict=True):
        chunks = None if lst is None else [read[m] for m, _ in lst]
        if chunks is None or any(c is None for c in chunks):
            result[snapshot.id] = None
            continue
        refs = [r for chunk in chunks for r in chunk]
        added = {_path_key(r) for r in refs if r.kind == ADD}
        deleted = {_path_key(r): r for r in refs if r.kind == DELETE and _path_key(r) not in added}
        result[snapshot.id] = list(deleted.values())
    return result


def added_in_changelogs(meta: TableMetadata, snapshots: Sequence[Snapshot]) -> list[FileRef]:
    """Changelog files the snapshots produced: ADD entries of their changelog manifests."""
    lists = parallel_map(
        lambda s: _try(meta.manifest_list, s.changelog_manifest_list, "changelog list"),
        snapshots,
    )
    names = sorted({m for lst in lists if lst for m, _ in lst})
    chunks = parallel_map(lambda m: _try(meta.manifest_refs, m, "changelog manifest"), names)
    return [r for chunk in chunks if chunk for r in chunk if r.kind == ADD]


class TagSkipper:
    """Files of the nearest tag before a snapshot: what a DELETE there must not remove."""

    def __init__(self, meta: TableMetadata, tags: Sequence[Snapshot]):
        self.meta = meta
        self.tags = sorted(tags, key=lambda t: t.id)
        self.ids = [t.id for t in self.tags]
        self._cache: dict[int, set[str] | None] = {}

    def prefetch(self, snapshot_ids: Sequence[int]) -> None:
        """Build, in parallel, the file sets of every tag the given snapshots will ask for."""
        wanted = {t.id: t for i in snapshot_ids if (t := self._previous(i)) is not None}
        todo = [t for tid, t in wanted.items() if tid not in self._cache]
        for tag, files in zip(todo, parallel_map(self._build, todo), strict=True):
            self._cache[tag.id] = files

    def _previous(self, snapshot_id: int) -> Snapshot | None:
        """The tag with the largest id below snapshot_id."""
        index = bisect.bisect_left(self.ids, snapshot_id) - 1
        return self.tags[index] if index >= 0 else None

    def _build(self, tag: Snapshot) -> set[str] | None:
        """A tag's live file names; None if any of its manifests cannot be read."""
        try:
            return self.meta.live_files(tag)
        except Exception as e:
            log.warning("cannot build the file set of tag snapshot %d: %s", tag.id, e)
            return None

    def skip_set(self, snapshot_id: int) -> set[str] | None:
        """Names to keep for a snapshot's deletions; None means delete nothing for it."""
        tag = self._previous(snapshot_id)
        if tag is None:
            return set()
        if tag.id not in self._cache:
            self._cache[tag.id] = self._build(tag)
        return self._cache[tag.id]


def data_files_to_delete(
    meta: TableMetadata,
    snapshots: Sequence[Snapshot],
    skipper: TagSkipper,
    *,
    keep_append_files: bool,
) -> list[FileRef]:
    """Files deleted by the snapshots' deltas that no earlier tag still holds.

    keep_append_files: with a decoupled changelog and no changelog producer, the APPEND files
    are the changelog and stay until changelog expiry removes them.
    """
    skipper.prefetch([s.id for s in snapshots])
    result = []
    for snapshot_id, refs in deleted_in_deltas(meta, snapshots).items():
        skip = skipper.skip_set(snapshot_id)
        if refs is None or skip is None:
            log.info(
                "keeping the data files deleted by snapshot %d (metadata unreadable)", snapshot_id
            )
            continue
        for ref in refs:
            if ref.file_name in skip:
                continue
            if keep_append_files and (ref.file_source is None or ref.file_source == APPEND_SOURCE):
                continue
            result.append(ref)
    return result


ListsOf = Callable[[Snapshot], list[str]]


def lists_named(*, data_lists: bool, changelog_lists: bool) -> ListsOf:
    """A snapshot's base and delta lists and/or its changelog list."""

    def lists_of(s: Snapshot) -> list[str]:
        names = [s.base_manifest_list, s.delta_manifest_list] if data_lists else []
        if changelog_lists and s.changelog_manifest_list:
            names.append(s.changelog_manifest_list)
        return names

    return lists_of


def changelog_lists(c: Snapshot) -> list[str]:
    """What a long-lived changelog owns: its changelog list, else its base and delta lists."""
    if c.changelog_manifest_list:
        return [c.changelog_manifest_list]
    return [c.base_manifest_list, c.delta_manifest_list]


def metadata_to_delete(
    meta: TableMetadata,
    snapshots: Sequence[Snapshot],
    skipping: set[str],
    *,
    lists_of: ListsOf,
    index: bool = True,
) -> list[str]:
    """Manifest lists, manifests, index and statistics files only the given snapshots use.

    `skipping` holds every name something retained needs; it grows as names are claimed, so
    a file shared by several expiring snapshots is listed once.
    """
    skipping = set(skipping)

    paths = []
    for _, listed in snapshot_lists(meta, snapshots, lists_of):
        for lst in listed:
            for manifest, extra in lst.manifests or ():
                for name in (manifest, *extra):
                    if name not in skipping:
                        skipping.add(name)
                        paths.append(meta.manifest_path(name))
            if lst.name not in skipping:
                skipping.add(lst.name)
                paths.append(meta.manifest_path(lst.name))
    for s in snapshots:
        if index and s.index_manifest and s.index_manifest not in skipping:
            paths += _index_paths(meta, s.index_manifest, skipping)
        if index and s.statistics and s.statistics not in skipping:
            skipping.add(s.statistics)
            paths.append(f"{meta.root}/statistics/{s.statistics}")
    return paths


def _index_paths(meta: TableMetadata, index_manifest: str, skipping: set[str]) -> list[str]:
    """An unused index manifest and its index files nobody retained uses."""
    entries = _try(meta.index_files, index_manifest, "index manifest")
    if entries is None:
        return []
    skipping.add(index_manifest)
    paths = []
    for e in entries:
        if e.index_file.file_name not in skipping:
            skipping.add(e.index_file.file_name)
            paths.append(
                bucket_index_path(meta.table, tuple(e.partition.values), e.bucket, e.index_file)
            )
    return [*paths, meta.manifest_path(index_manifest)]


def data_paths(meta: TableMetadata, refs: Sequence[FileRef], protected: set[str]) -> list[str]:
    """Deduplicated paths of data files (and their extra files) not otherwise protected."""
    found: dict[str, None] = {}
    for ref in refs:
        if ref.file_name not in protected:
            found.update(dict.fromkeys(meta.data_paths(ref)))
    return list(found)


def used_by_latest(meta: TableMetadata) -> set[str]:
    """Every file the newest snapshot uses, read just before deleting anything."""
    ids = meta.ids(meta.main.dir("snapshot"), SNAPSHOT_PREFIX)
    latest = meta.snapshot(ids[-1]) if ids else None
    if latest is None:
        return set()
    return meta.metadata_files(latest)[0] | meta.live_files(latest)


def unused(paths: Sequence[str], in_use: set[str], what: str) -> list[str]:
    """Drop paths whose file the latest snapshot uses (a concurrent commit re-used it)."""
    keep = [p for p in paths if p.rsplit("/", 1)[-1] not in in_use]
    if len(keep) != len(paths):
        log.warning("kept %d %s the latest snapshot uses", len(paths) - len(keep), what)
    return keep
