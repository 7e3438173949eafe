"""Every file some snapshot, tag, changelog or branch still references (OrphanFilesClean)."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from dagster_paimon.errors import MaintenanceAbortedError
from dagster_paimon.format.metadata import Snapshot
from dagster_paimon.snapshot.lists import snapshot_lists
from dagster_paimon.snapshot.metadata import (
    CHANGELOG_PREFIX,
    SNAPSHOT_PREFIX,
    TAG_PREFIX,
    Branch,
    TableMetadata,
)
from dagster_paimon.storage.pool import parallel_map

log = logging.getLogger(__name__)

CHANGELOG = "changelog"


@dataclass(frozen=True)
class Referrer:
    """A metadata file that roots a tree of files: a snapshot, tag or changelog of a branch."""

    branch: Branch
    kind: str
    key: str
    path: str

    @property
    def order(self) -> tuple:
        """Branch, kind, then id order: consecutive snapshots share most of their lists."""
        return (self.branch.name, self.kind, int(self.key) if self.key.isdigit() else -1, self.key)


def referrers(meta: TableMetadata, branch: Branch) -> list[Referrer]:
    """Every snapshot, tag and long-lived changelog file of a branch, as listed now."""
    found = [
        Referrer(branch, "snapshot", str(i), meta.snapshot_path(i, branch))
        for i in meta.ids(branch.dir("snapshot"), SNAPSHOT_PREFIX)
    ]
    found += [
        Referrer(branch, CHANGELOG, str(i), meta.changelog_path(i, branch))
        for i in meta.ids(branch.dir(CHANGELOG), CHANGELOG_PREFIX)
    ]
    found += [
        Referrer(branch, "tag", s.name, s.path)
        for s in meta.files.list_dir(branch.dir("tag"))
        if s.name.startswith(TAG_PREFIX) and not s.is_dir
    ]
    return found


@dataclass
class UsedFiles:
    """Names of files in use (Paimon names are unique UUIDs), and the manifests already read."""

    names: set[str] = field(default_factory=set)
    manifests: set[str] = field(default_factory=set)
    seen: set[Referrer] = field(default_factory=set)

    def __contains__(self, name: str) -> bool:
        return name in self.names


def _missing(meta: TableMetadata, ref: Referrer, what: str) -> None:
    """Metadata a referrer needs is gone: fine if the referrer went too, fatal otherwise."""
    if ref.kind != CHANGELOG and meta.file_io.exists(ref.path):
        raise MaintenanceAbortedError(
            f"{ref.kind} {ref.key} of branch {ref.branch.name} references missing {what}; "
            "cannot tell which files are in use"
        )


def _lists(
    roots: list[tuple[Referrer, Snapshot]], meta: TableMetadata, used: UsedFiles
) -> set[str]:
    """Add every list and its manifests' names; return the manifests not read before."""
    snapshots = [s for _, s in roots]
    by_id = {id(s): r for r, s in roots}
    wanted: set[str] = set()
    for snapshot, listed in snapshot_lists(meta, snapshots, TableMetadata.root_lists):
        for lst in listed:
            used.names.add(lst.name)
            if lst.manifests is None:
                # a changelog's base list may be gone with its snapshot's expiry
                _missing(meta, by_id[id(snapshot)], f"manifest list {lst.name}")
                continue
            for manifest, extra in lst.manifests:
                used.names.add(manifest)
                used.names.update(extra)
                if manifest not in used.manifests:
                    wanted.add(manifest)
    return wanted


def _index_and_stats(
    roots: list[tuple[Referrer, Snapshot]], meta: TableMetadata, used: UsedFiles
) -> None:
    """Index manifests (each read once) with their index files, and statistics files."""
    index: dict[str, Referrer] = {}
    for ref, s in roots:
        if s.index_manifest and s.index_manifest not in used.names:
            index.setdefault(s.index_manifest, ref)
        if s.statistics:
            used.names.add(s.statistics)

    def read(name: str) -> list[str] | None:
        try:
            return [e.index_file.file_name for e in meta.index_files(name)]
        except FileNotFoundError:
            return None

    names = sorted(index)
    for name, files in zip(names, parallel_map(read, names), strict=True):
        used.names.add(name)
        if files is None:
            _missing(meta, index[name], f"index manifest {name}")
        else:
            used.names.update(files)


def _file_names(meta: TableMetadata, manifest: str) -> list[str] | None:
    """Every data file (and extra file) a manifest names, ADD or DELETE; None if missing."""
    try:
        return [n for r in meta.manifest_refs(manifest) for n in (r.file_name, *r.extra_files)]
    except FileNotFoundError:
        return None


def _still_needed(meta: TableMetadata, missing: set[str]) -> str | None:
    """A referrer existing now whose lists name a missing manifest (decoded in full)."""
    for branch in meta.branches():
        for ref in referrers(meta, branch):
            snapshot = meta.read_json(ref.path, Snapshot)
            if snapshot is None:
                continue
            for lst in meta.root_lists(snapshot):
                try:
                    hit = {m for m, _ in meta.manifest_list(lst)} & missing
                except FileNotFoundError:
                    continue
                if hit:
                    return (
                        f"manifest {sorted(hit)[0]} of {ref.kind} {ref.key} (branch {branch.name})"
                    )
    return None


def collect_used(
    meta: TableMetadata, refs: list[Referrer], used: UsedFiles | None = None
) -> UsedFiles:
    """Add the files of `refs` to `used`, reading each manifest only once across calls.

    A missing manifest list, index manifest or manifest is fatal unless every referrer that
    needs it is gone: guessing 'unused' for files behind missing metadata would delete data.
    """
    used = used or UsedFiles()
    new = sorted((r for r in refs if r not in used.seen), key=lambda r: r.order)
    snapshots = parallel_map(lambda r: meta.read_json(r.path, Snapshot), new)
    used.seen.update(new)
    roots = [(r, s) for r, s in zip(new, snapshots, strict=True) if s is not None]
    wanted = _lists(roots, meta, used)
    _index_and_stats(roots, meta, used)
    names = sorted(wanted)
    log.info("reading %d manifests referenced by %d roots", len(names), len(roots))
    missing = set()
    for name, files in zip(names, parallel_map(lambda m: _file_names(meta, m), names), strict=True):
        if files is None:
            missing.add(name)
        else:
            used.manifests.add(name)
            used.names.update(files)
    if missing and (needed := _still_needed(meta, missing)):
        raise MaintenanceAbortedError(f"{needed} is missing; cannot tell which files are in use")
    return used
