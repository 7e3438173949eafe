"""Doctor: find the snapshots and tags no reader can read, and roll back a broken newest run.

Paimon's Java procedures (remove_unexisting_files, remove_unexisting_manifests) rewrite
metadata around missing files. The doctor rewrites nothing: it can only remove the newest
snapshot files when they are unreadable and an older snapshot is not, so every remaining
snapshot keeps exactly the files it references; orphan removal later reclaims what the
removed snapshots alone referenced.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime

from dagster_paimon.errors import RepairRefusedError
from dagster_paimon.format.metadata import Snapshot
from dagster_paimon.format.table import FileStoreTable, statistics_root
from dagster_paimon.io.filekind import ADD
from dagster_paimon.io.index import index_path
from dagster_paimon.maintenance.context import DEFAULT_CONTEXT, MaintenanceContext, table_name
from dagster_paimon.maintenance.guard import Seen, check_unchanged
from dagster_paimon.maintenance.rollback import drop_newest_snapshots
from dagster_paimon.partition import Partition
from dagster_paimon.results import DETAIL, METRIC, Reported, run_planned
from dagster_paimon.snapshot.metadata import (
    EARLIEST,
    LATEST,
    SNAPSHOT_PREFIX,
    TAG_PREFIX,
    FileRef,
    TableMetadata,
)
from dagster_paimon.storage.pool import parallel_map
from dagster_paimon.unsupported import ROLLBACK, check_supported_layout

log = logging.getLogger(__name__)

MANIFEST_LIST = "manifest-list"
MANIFEST = "manifest"
INDEX_MANIFEST = "index-manifest"
INDEX_FILE = "index-file"
DATA_FILE = "data-file"
STATISTICS = "statistics"
KINDS = (MANIFEST_LIST, MANIFEST, INDEX_MANIFEST, INDEX_FILE, DATA_FILE, STATISTICS)
UNOPENABLE = frozenset({MANIFEST_LIST, MANIFEST, INDEX_MANIFEST})

NO_CURE = "a rollback cannot repair tags: restore their files, or delete the tags"


@dataclass(frozen=True)
class Missing:
    """A file a snapshot or tag needs that the store does not have."""

    kind: str
    path: str

    def to_dict(self) -> dict:
        """{kind, path} as the JSON shows it."""
        return {"kind": self.kind, "path": self.path}


@dataclass(frozen=True)
class Damage:
    """A snapshot (or the tag `tag`) a reader cannot read, and the files that makes it so."""

    snapshot_id: int
    missing: tuple[Missing, ...]
    tag: str | None = None

    @property
    def opens(self) -> bool:
        """Whether a reader can still open it (its metadata is whole; a read of it fails)."""
        return not any(m.kind in UNOPENABLE for m in self.missing)

    def to_dict(self) -> dict:
        """The JSON of one unreadable snapshot or tag."""
        body = {
            "snapshot_id": self.snapshot_id,
            "opens": self.opens,
            "missing": [m.to_dict() for m in self.missing],
        }
        return body if self.tag is None else {"tag": self.tag, **body}


@dataclass(frozen=True)
class BadHint:
    """An EARLIEST or LATEST hint that sends a reader to the wrong or a missing snapshot."""

    name: str
    value: int
    problem: str

    def to_dict(self) -> dict:
        """The JSON of one bad hint."""
        return {"hint": self.name, "value": self.value, "problem": self.problem}


@dataclass(frozen=True)
class Commit:
    """What a snapshot's commit contained, as far as its delta manifests can still be read:
    what an operator needs to replay it once the snapshot is rolled back."""

    snapshot_id: int
    commit_kind: str
    commit_user: str
    commit_identifier: int
    time_millis: int
    delta_record_count: int
    added: tuple[str, ...]
    deleted: tuple[str, ...]
    unreadable: tuple[str, ...]

    def to_dict(self) -> dict:
        """The JSON of one rolled-back commit."""
        return {
            "snapshot_id": self.snapshot_id,
            "commit_kind": self.commit_kind,
            "commit_user": self.commit_user,
            "commit_identifier": self.commit_identifier,
            "time_millis": self.time_millis,
            "delta_record_count": self.delta_record_count,
            "added": list(self.added),
            "deleted": list(self.deleted),
            "unreadable": list(self.unreadable),
        }

    def describe(self) -> str:
        """One line for the commit, then one per file it added (+) or deleted (-)."""
        when = datetime.fromtimestamp(self.time_millis / 1000, UTC).isoformat(timespec="seconds")
        head = (
            f"snapshot {self.snapshot_id}: {self.commit_kind} by {self.commit_user}, "
            f"identifier {self.commit_identifier}, at {when}, {self.delta_record_count} delta "
            f"records, {len(self.added)} files added, {len(self.deleted)} deleted"
        )
        return "\n".join(
            [
                head,
                *(f"    + {p}" for p in self.added),
                *(f"    - {p}" for p in self.deleted),
                *(f"    ? {p} (missing: its files are unknown)" for p in self.unreadable),
            ]
        )


def _span(ids: Sequence[int]) -> str:
    """Ids as ranges: 1-3, 7."""
    parts: list[str] = []
    start = prev = None
    for i in [*sorted(ids), None]:
        if prev is not None and i == prev + 1:
            prev = i
            continue
        if start is not None:
            parts.append(str(start) if start == prev else f"{start}-{prev}")
        start = prev = i
    return ", ".join(parts)


def _count(n: int, noun: str) -> str:
    """'1 tag', '2 tags'."""
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _snapshots(ids: Sequence[int]) -> str:
    """'snapshot 6', 'snapshots 5-6'."""
    return f"snapshot{'s' if len(ids) > 1 else ''} {_span(ids)}"


@dataclass(frozen=True, kw_only=True)
class DoctorResult(Reported):
    """What the doctor found, and what a repair did (or, dry, would do)."""

    table: str
    snapshots_checked: int
    tags_checked: int
    unreadable: tuple[Damage, ...]
    tags: tuple[Damage, ...]
    hints: tuple[BadHint, ...]
    commits: tuple[Commit, ...]
    refusal: str | None
    rolled_back: tuple[int, ...]
    latest: int | None
    dry_run: bool
    rewritten_hints: tuple[str, ...] = ()
    seconds: float = 0.0

    FIELDS = {
        "table": DETAIL,
        "snapshots_checked": METRIC,
        "tags_checked": DETAIL,
        "unreadable_snapshots": METRIC,
        "missing_files": METRIC,
        "tags_affected": METRIC,
        "bad_hints": DETAIL,
        "rolled_back": METRIC,
        "commits": DETAIL,
        "repair": DETAIL,
        "latest": DETAIL,
        "healthy": METRIC,
        "dry_run": DETAIL,
        "seconds": METRIC,
    }

    @property
    def unreadable_snapshots(self) -> tuple[Damage, ...]:
        """The snapshots no reader can read."""
        return self.unreadable

    @property
    def tags_affected(self) -> tuple[Damage, ...]:
        """The tags no reader can read."""
        return self.tags

    @property
    def bad_hints(self) -> tuple[BadHint, ...]:
        """EARLIEST or LATEST hints that mislead a reader."""
        return self.hints

    @property
    def healthy(self) -> bool:
        """Every snapshot and tag reads, and the hints lead readers to existing snapshots."""
        return not (self.unreadable or self.tags or self.hints)

    @property
    def missing_files(self) -> int:
        """Distinct missing files the remaining snapshots and tags need."""
        return len({m.path for d in (*self.unreadable, *self.tags) for m in d.missing})

    def repair(self) -> str | None:
        """What a repair did, would do, or why it cannot; None when there is nothing to say."""
        ids = _snapshots([c.snapshot_id for c in self.commits])
        hints = " and ".join(self.rewritten_hints)
        if not self.dry_run:
            done = [f"rolled back {ids}"] if self.rolled_back else []
            done += [f"rewrote the {hints} hint"] if hints else []
            return "; ".join(done) or ("nothing to repair" if self.healthy else NO_CURE)
        if self.refusal:
            return f"a rollback is not possible: {self.refusal}"
        bad = " and ".join(h.name for h in self.hints)
        todo = [f"remove {ids}"] if self.commits else []
        todo += [f"rewrite the {bad} hint"] if bad else []
        if todo:
            return f"--rollback-unreadable would {' and '.join(todo)}"
        return NO_CURE if self.tags else None

    def verdict(self) -> str:
        """The first line of the summary: healthy or not, and how much is damaged."""
        checked = f"{_count(self.snapshots_checked, 'snapshot')} and "
        checked += _count(self.tags_checked, "tag")
        if self.healthy:
            return f"{self.table}: healthy, {checked} checked, latest {self.latest}"
        return (
            f"{self.table}: UNHEALTHY, {_count(len(self.unreadable), 'unreadable snapshot')} "
            f"and {_count(len(self.tags), 'unreadable tag')} among {checked}, "
            f"{_count(self.missing_files, 'missing file')}, "
            f"{_count(len(self.hints), 'bad hint')}, latest {self.latest}"
        )

    def summary(self) -> str:
        """The verdict, each missing file with what needs it, then the repair."""
        lines = [self.verdict()]
        needed_by: dict[Missing, tuple[list[int], list[str]]] = {}
        for d in (*self.unreadable, *self.tags):
            for m in d.missing:
                ids, names = needed_by.setdefault(m, ([], []))
                if d.tag is None:
                    ids.append(d.snapshot_id)
                else:
                    names.append(d.tag)
        for m, (ids, names) in needed_by.items():
            who = [_snapshots(ids)] if ids else []
            who += [f"tag{'s' if len(names) > 1 else ''} {', '.join(names)}"] if names else []
            lines.append(f"  missing {m.kind} {m.path} (needed by {'; '.join(who)})")
        for d in (*self.unreadable, *self.tags):
            what = f"snapshot {d.snapshot_id}"
            what = f"tag {d.tag} ({what})" if d.tag else what
            how = "opens, but reading it fails" if d.opens else "cannot be opened"
            lines.append(f"  {what}: {how}")
        lines += [f"  {h.name} hint: {h.problem}" for h in self.hints]
        if repair := self.repair():
            lines.append(f"repair: {repair}")
        lines += [c.describe() for c in self.commits]
        return "\n".join(lines)


@dataclass(frozen=True)
class DoctorReport:
    """The diagnosis, and the rollback a repair would run: the plan of the doctor."""

    table: str
    snapshot_ids: tuple[int, ...]
    unreadable: tuple[Damage, ...]
    tags: tuple[Damage, ...]
    tagged_ids: frozenset[tuple[str, int]]
    hints: tuple[BadHint, ...]
    rollback: tuple[Commit, ...]
    refusal: str | None

    @property
    def latest(self) -> int | None:
        """The newest snapshot by listing."""
        return self.snapshot_ids[-1] if self.snapshot_ids else None

    @property
    def seen(self) -> Seen:
        """What the diagnosis saw, for the repair's stale-plan guard."""
        return Seen(latest=self.latest, tags=self.tagged_ids)

    def preview(self) -> DoctorResult:
        """The diagnosis, nothing changed."""
        return DoctorResult(
            table=self.table,
            snapshots_checked=len(self.snapshot_ids),
            tags_checked=len(self.tagged_ids),
            unreadable=self.unreadable,
            tags=self.tags,
            hints=self.hints,
            commits=self.rollback,
            refusal=self.refusal,
            rolled_back=(),
            latest=self.latest,
            dry_run=True,
        )


@dataclass(frozen=True)
class _Reads:
    """Every manifest list, manifest and index manifest the roots name, each read once;
    None where the file is missing."""

    lists: dict[str, list[tuple[str, tuple[str, ...]]] | None]
    manifests: dict[str, list[FileRef] | None]
    indexes: dict[str, list[str] | None]


def _or_none(read: Callable[[str], list]) -> Callable[[str], list | None]:
    """`read`, answering None for a missing file."""

    def reading(name: str) -> list | None:
        try:
            return read(name)
        except FileNotFoundError:
            return None

    return reading


def _read_each(names: Iterable[str], read: Callable[[str], list]) -> dict:
    """name -> contents (None if missing), read in parallel."""
    ordered = sorted(set(names))
    return dict(zip(ordered, parallel_map(_or_none(read), ordered), strict=True))


def _index_paths(meta: TableMetadata, name: str) -> list[str]:
    """Paths of the index files an index manifest names."""
    return [
        index_path(meta.table, Partition.of_row(e.partition), e.bucket, e.index_file)
        for e in meta.index_files(name)
        if e.kind == ADD
    ]


def _read(meta: TableMetadata, snapshots: Sequence[Snapshot]) -> _Reads:
    """Read every distinct list, then manifest, then index manifest of the snapshots once."""
    lists = _read_each((n for s in snapshots for n in meta.root_lists(s)), meta.manifest_list)
    manifests = _read_each(
        (m for listed in lists.values() if listed for m, _ in listed), meta.manifest_refs
    )
    indexes = _read_each(
        (s.index_manifest for s in snapshots if s.index_manifest),
        lambda n: _index_paths(meta, n),
    )
    log.info(
        "read %d manifest lists, %d manifests and %d index manifests of %d snapshots and tags",
        len(lists),
        len(manifests),
        len(indexes),
        len(snapshots),
    )
    return _Reads(lists, manifests, indexes)


def _needs(
    meta: TableMetadata, reads: _Reads, snapshot: Snapshot
) -> tuple[list[Missing], dict[str, str]]:
    """(metadata it needs that is missing, every other file it needs as path -> kind).

    Data files are those live after base and delta, plus the changelog files; with a data
    manifest missing, which files are live is unknown, so they are not checked.
    """
    missing: list[Missing] = []
    files: dict[str, str] = {}
    data: list[FileRef] = []
    whole = True
    for lst in meta.root_lists(snapshot):
        is_data = lst != snapshot.changelog_manifest_list
        listed = reads.lists[lst]
        if listed is None:
            missing.append(Missing(MANIFEST_LIST, meta.manifest_path(lst)))
            whole = whole and not is_data
            continue
        for manifest, extra in listed:
            files.update(dict.fromkeys(map(meta.manifest_path, extra), MANIFEST))
            refs = reads.manifests[manifest]
            if refs is None:
                missing.append(Missing(MANIFEST, meta.manifest_path(manifest)))
                whole = whole and not is_data
            elif is_data:
                data += refs
            else:
                changes = (r for r in refs if r.kind == ADD)
                files.update((p, DATA_FILE) for r in changes for p in meta.data_paths(r))
    if whole:
        deleted = {r.identifier for r in data if r.kind != ADD}
        live = (r for r in data if r.kind == ADD and r.identifier not in deleted)
        files.update((p, DATA_FILE) for r in live for p in meta.data_paths(r))
    if snapshot.index_manifest:
        paths = reads.indexes[snapshot.index_manifest]
        if paths is None:
            missing.append(Missing(INDEX_MANIFEST, meta.manifest_path(snapshot.index_manifest)))
        else:
            files.update(dict.fromkeys(paths, INDEX_FILE))
    if snapshot.statistics:
        statistics = statistics_root(meta.table)
        files[f"{statistics}/{snapshot.statistics}"] = STATISTICS
    return missing, files


def _absent(meta: TableMetadata, paths: Iterable[str]) -> set[str]:
    """The paths the store lacks: one listing per directory under the table, else a HEAD."""
    by_dir: dict[str, list[str]] = {}
    outside: list[str] = []
    for p in paths:
        if p.startswith(meta.root + "/"):
            by_dir.setdefault(p.rsplit("/", 1)[0], []).append(p)
        else:
            outside.append(p)
    dirs = sorted(by_dir)
    listed = parallel_map(lambda d: {s.name for s in meta.files.list_dir(d)}, dirs)
    log.info("listed %d directories, probing %d files outside the table", len(dirs), len(outside))
    absent = {
        p
        for d, names in zip(dirs, listed, strict=True)
        for p in by_dir[d]
        if p.rsplit("/", 1)[-1] not in names
    }
    present = parallel_map(meta.file_io.exists, outside)
    return absent | {p for p, ok in zip(outside, present, strict=True) if not ok}


def _damage(
    meta: TableMetadata, reads: _Reads, roots: Sequence[tuple[str | None, Snapshot]]
) -> list[Damage]:
    """The roots (tag name or None, snapshot) missing files, each with what it misses.

    Roots with the same lists (a tag and its snapshot) are judged once; the files each needs
    are derived again, not kept, when something is missing: a table's history would hold its
    file names once per snapshot.
    """
    keys = [(*meta.root_lists(s), s.index_manifest, s.statistics) for _, s in roots]
    unique = {k: s for k, (_, s) in zip(keys, roots, strict=True)}
    lacking: dict[tuple, list[Missing]] = {}
    wanted: dict[str, str] = {}
    for key, snapshot in unique.items():
        lacking[key], files = _needs(meta, reads, snapshot)
        wanted.update(files)
    absent = _absent(meta, wanted)
    for key, snapshot in unique.items() if absent else ():
        files = _needs(meta, reads, snapshot)[1]
        lacking[key] += [Missing(kind, p) for p, kind in files.items() if p in absent]
    order = {k: i for i, k in enumerate(KINDS)}
    return [
        Damage(s.id, tuple(sorted(set(lacking[k]), key=lambda m: (order[m.kind], m.path))), tag)
        for k, (tag, s) in zip(keys, roots, strict=True)
        if lacking[k]
    ]


def _still_there(meta: TableMetadata, found: list[Damage]) -> list[Damage]:
    """Damage of roots that still exist: an expiry running meanwhile deletes files first."""
    tag_dir = meta.main.dir("tag")

    def path(d: Damage) -> str:
        return f"{tag_dir}/{TAG_PREFIX}{d.tag}" if d.tag else meta.snapshot_path(d.snapshot_id)

    exists = parallel_map(lambda d: meta.file_io.exists(path(d)), found)
    return [d for d, ok in zip(found, exists, strict=True) if ok]


def _hint(meta: TableMetadata, name: str) -> int | None:
    """A hint's value; None when absent or unparsable (readers then list the directory)."""
    try:
        return int(meta.file_io.read_file_utf8(f"{meta.main.dir('snapshot')}/{name}").strip())
    except (FileNotFoundError, ValueError):
        return None


def _bad_hints(meta: TableMetadata, ids: Sequence[int]) -> tuple[BadHint, ...]:
    """Hints naming a missing snapshot, or a LATEST Java trusts short of the newest.

    A lagging LATEST whose next snapshot exists is fine: readers then list the directory.
    """
    present = set(ids)
    found = []
    for name in (EARLIEST, LATEST):
        value = _hint(meta, name)
        if value is None or not ids:
            continue
        if value not in present:
            found.append(BadHint(name, value, f"names snapshot {value}, which does not exist"))
        elif name == LATEST and value != ids[-1] and value + 1 not in present:
            problem = (
                f"names snapshot {value}, and as snapshot {value + 1} does not exist Java "
                f"readers take it for the newest, not {ids[-1]}"
            )
            found.append(BadHint(name, value, problem))
    return tuple(found)


def _commit(meta: TableMetadata, reads: _Reads, snapshot: Snapshot) -> Commit:
    """A snapshot's commit as its delta manifests (those still readable) record it."""
    added: list[str] = []
    deleted: list[str] = []
    lost: list[str] = []
    listed = reads.lists.get(snapshot.delta_manifest_list)
    if listed is None:
        lost.append(meta.manifest_path(snapshot.delta_manifest_list))
    for manifest, _ in listed or ():
        refs = reads.manifests.get(manifest)
        if refs is None:
            lost.append(meta.manifest_path(manifest))
        for r in refs or ():
            (added if r.kind == ADD else deleted).append(meta.data_paths(r)[0])
    return Commit(
        snapshot_id=snapshot.id,
        commit_kind=snapshot.commit_kind,
        commit_user=snapshot.commit_user,
        commit_identifier=snapshot.commit_identifier,
        time_millis=snapshot.time_millis,
        delta_record_count=snapshot.delta_record_count,
        added=tuple(added),
        deleted=tuple(deleted),
        unreadable=tuple(lost),
    )


def _rollback(
    ids: Sequence[int], unreadable: Iterable[int], tags: Iterable[tuple[str, int]]
) -> tuple[list[int], str | None]:
    """(ids a rollback removes, newest first; why a rollback is refused, or None)."""
    bad = set(unreadable)
    if not bad:
        return [], None
    keep = len(ids)
    while keep and ids[keep - 1] in bad:
        keep -= 1
    run = list(ids[keep:])
    if keep == 0:
        return [], f"every snapshot ({_span(ids)}) is unreadable; none is left to roll back to"
    stuck = sorted(bad - set(run))
    if stuck:
        newer = [i for i in ids if i > stuck[-1]]
        return [], (
            f"{_snapshots(stuck)} cannot be read but the newer snapshot {newer[0]} can, and "
            f"a rollback only removes the newest snapshots: expire snapshots up to {stuck[-1]} "
            f"instead (expire-snapshots --retain-min {len(newer)} --retain-max {len(newer)})"
        )
    tagged = sorted((i, n) for n, i in tags if i in run)
    if tagged:
        i, name = tagged[0]
        return [], (
            f"tag {name} points at snapshot {i}, which a rollback would remove; delete the "
            "tag first if its data is lost"
        )
    return run[::-1], None


def diagnose(
    table: FileStoreTable, *, context: MaintenanceContext = DEFAULT_CONTEXT
) -> DoctorReport:
    """Check every snapshot of the main branch and every tag for missing files; reads only.

    Raises no input error (the report says what is broken); TransientStoreError.
    """
    meta = context.metadata(table)
    ids = meta.ids(meta.main.dir("snapshot"), SNAPSHOT_PREFIX)
    snapshots = meta.snapshots(ids)
    ids = [s.id for s in snapshots]
    tags = meta.tags()
    roots = [(None, s) for s in snapshots] + [(name, s) for name, s in tags]
    reads = _read(meta, [s for _, s in roots])
    damage = _still_there(meta, _damage(meta, reads, roots))
    broken = tuple(d for d in damage if d.tag is None)
    tagged = frozenset((name, s.id) for name, s in tags)
    run, refusal = _rollback(ids, (d.snapshot_id for d in broken), tagged)
    by_id = {s.id: s for s in snapshots}
    log.info(
        "%d of %d snapshots and %d of %d tags of %s are unreadable",
        len(broken),
        len(ids),
        len(damage) - len(broken),
        len(tags),
        table.table_path,
    )
    return DoctorReport(
        table=table_name(table),
        snapshot_ids=tuple(ids),
        unreadable=broken,
        tags=tuple(d for d in damage if d.tag is not None),
        tagged_ids=tagged,
        hints=_bad_hints(meta, ids),
        rollback=tuple(_commit(meta, reads, by_id[i]) for i in run),
        refusal=refusal,
    )


def execute_repair(
    table: FileStoreTable, report: DoctorReport, *, context: MaintenanceContext = DEFAULT_CONTEXT
) -> DoctorResult:
    """Roll back the report's unreadable newest snapshots and rewrite bad hints.

    Only snapshot files and hints change, never a manifest, list or data file, so nothing a
    readable snapshot references is touched. LATEST moves first, then the snapshots go newest
    first: a run that dies midway leaves a contiguous history and a rerun finishes it.
    """
    start = time.perf_counter()
    if report.refusal:
        raise RepairRefusedError(f"{report.table}: {report.refusal}; nothing was changed")
    if report.rollback or report.hints:
        check_supported_layout(table.table_schema, operation=ROLLBACK)
    files = context.table_files(table)
    meta = TableMetadata(table, files)
    removing = [c.snapshot_id for c in report.rollback]
    kept = [i for i in report.snapshot_ids if i not in removing]
    directory = meta.main.dir("snapshot")
    if removing:
        check_unchanged(
            meta,
            report.seen,
            latest=True,
            tags_on=set(removing).__contains__,
            then="run the doctor again",
        )
        for commit in report.rollback:
            log.warning("rolling back unreadable %s", commit.describe())
        drop_newest_snapshots(meta, files, kept[-1], removing)
    ids = meta.ids(directory, SNAPSHOT_PREFIX)
    if removing and ids[-1] != kept[-1]:
        log.error("snapshot %d was committed during the rollback; run the doctor again", ids[-1])
    rewritten = _bad_hints(meta, ids)
    for hint in rewritten:
        meta.write_hint(directory, hint.name, ids[0] if hint.name == EARLIEST else ids[-1])
    return replace(
        report.preview(),
        unreadable=(),
        hints=_bad_hints(meta, ids),
        rolled_back=tuple(removing),
        rewritten_hints=tuple(h.name for h in rewritten),
        latest=ids[-1] if ids else None,
        dry_run=False,
        seconds=time.perf_counter() - start,
    )


def doctor(
    table: FileStoreTable,
    *,
    repair: bool = False,
    context: MaintenanceContext = DEFAULT_CONTEXT,
) -> DoctorResult:
    """Diagnose the table; with repair, roll back an unreadable newest run (execute_repair).

    Raises no input error; RepairRefusedError when a repair cannot be done safely (a broken
    snapshot not among the newest, or tagged), StaleMaintenancePlanError when the table changed
    between diagnosis and repair (nothing is changed then), TransientStoreError.
    """
    return run_planned(
        lambda: diagnose(table, context=context),
        lambda report: execute_repair(table, report, context=context),
        dry_run=not repair,
    )
