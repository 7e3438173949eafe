"""Orphan-file removal (LocalOrphanFilesClean): old files of the table nobody references.

Candidates are listed in the table's directories and, as Java's OrphanFilesClean does, under
every root of `data-file.external-paths` (io/external.py says which files there are the table's).
Atomic writes that died between writing their temp file and renaming it (`.<name>.<uuid>.tmp`,
ours, pypaimon's or Java's) leave it in a metadata directory: Java's cleaner takes every
non-record file of snapshot/ and changelog/; the temp files of tag/, consumer/ and schema/,
which Java leaves, go too (by their exact name only, so no tag or consumer is ever a candidate).

Only files older than the threshold are candidates, so a commit still writing its files is
never touched; references are re-read after listing so commits that landed meanwhile count.
"""

from __future__ import annotations

import logging
import re
import time
from dataclasses import dataclass, replace
from datetime import timedelta

from dagster_paimon.errors import InvalidArgumentError, MaintenanceAbortedError
from dagster_paimon.format.table import FileStoreTable, data_root, index_root
from dagster_paimon.io.external import (
    BUCKET_DIR_NAME,
    ENTROPY_DIR_NAMES,
    ExternalLayout,
    external_layout,
)
from dagster_paimon.maintenance.context import DEFAULT_CONTEXT, MaintenanceContext, table_name
from dagster_paimon.maintenance.options import DAY_MS
from dagster_paimon.maintenance.references import UsedFiles, collect_used, referrers
from dagster_paimon.results import DETAIL, METRIC, Reported, run_planned, timedelta_ms
from dagster_paimon.snapshot.metadata import (
    CHANGELOG_PREFIX,
    EARLIEST,
    LATEST,
    SNAPSHOT_PREFIX,
    Branch,
    TableMetadata,
)
from dagster_paimon.storage.files import FileStatus, delete_logged, is_temp_name
from dagster_paimon.storage.pool import parallel_map
from dagster_paimon.unsupported import ORPHAN_REMOVAL, check_supported_layout

log = logging.getLogger(__name__)

BUCKET_PREFIX = "bucket-"
# branch directories whose records are all kept: only a dead write's temp file is a candidate
TEMP_ONLY_DIRS = ("tag", "consumer", "schema")


@dataclass(frozen=True)
class OrphanPlan:
    """Files old enough and referenced by nothing, found against one set of references."""

    table: str
    cutoff_ms: int
    scanned_files: int
    orphans: tuple[FileStatus, ...]

    @property
    def bytes(self) -> int:
        """Bytes the orphans occupy."""
        return sum(f.size for f in self.orphans)

    def preview(self) -> OrphanResult:
        """The orphans, none deleted."""
        return OrphanResult(
            table=self.table,
            orphans=tuple(s.path for s in self.orphans),
            deleted=0,
            bytes=self.bytes,
            scanned_files=self.scanned_files,
            dry_run=True,
        )


@dataclass(frozen=True, kw_only=True)
class OrphanResult(Reported):
    """What remove-orphans deleted (or, dry, would delete), with its metrics."""

    table: str
    orphans: tuple[str, ...]
    deleted: int
    bytes: int
    scanned_files: int
    dry_run: bool
    seconds: float = 0.0

    FIELDS = {
        "table": DETAIL,
        "orphans": METRIC,
        "deleted": METRIC,
        "bytes": METRIC,
        "scanned_files": METRIC,
        "dry_run": DETAIL,
        "seconds": METRIC,
    }

    def summary(self) -> str:
        """One human line, then the orphans."""
        done = f"would delete {len(self.orphans)}" if self.dry_run else f"deleted {self.deleted}"
        head = (
            f"{self.table}: {len(self.orphans)} orphan files ({self.bytes} bytes) among "
            f"{self.scanned_files} scanned; {done}"
        )
        return "\n".join([head, *(f"  {p}" for p in self.orphans)])


def _non_record_files(meta: TableMetadata, directory: str, prefix: str) -> list[FileStatus]:
    """Files in a snapshot or changelog directory that are neither records nor hints."""
    return [
        s
        for s in meta.files.list_dir(directory)
        if not s.is_dir and not s.name.startswith(prefix) and s.name not in (EARLIEST, LATEST)
    ]


def _temp_files(meta: TableMetadata, directory: str) -> list[FileStatus]:
    """Temp files a killed atomic write left in a directory of records nobody else may judge."""
    return [s for s in meta.files.list_dir(directory) if not s.is_dir and is_temp_name(s.name)]


def _bucket_dirs(meta: TableMetadata, directory: str, depth: int) -> list[str]:
    """bucket-N directories under `depth` levels of k=v partition directories."""
    statuses = meta.files.list_dir(directory)
    if depth == 0:
        return [s.path for s in statuses if s.is_dir and s.name.startswith(BUCKET_PREFIX)]
    parts = [s.path for s in statuses if s.is_dir and "=" in s.name]
    return [
        b
        for chunk in parallel_map(lambda p: _bucket_dirs(meta, p, depth - 1), parts)
        for b in chunk
    ]


def _external_bucket_dirs(meta: TableMetadata, directory: str, prefixes: tuple[str, ...]):
    """bucket-N directories under this table's partition directories (`key=`, level by level)."""
    statuses = meta.files.list_dir(directory)
    if not prefixes:
        return [s.path for s in statuses if s.is_dir and re.fullmatch(BUCKET_DIR_NAME, s.name)]
    parts = [s.path for s in statuses if s.is_dir and s.name.startswith(prefixes[0])]
    return [
        b
        for chunk in parallel_map(lambda p: _external_bucket_dirs(meta, p, prefixes[1:]), parts)
        for b in chunk
    ]


def _external_bucket_files(
    meta: TableMetadata, layout: ExternalLayout, directory: str, depth: int = 0
) -> list[FileStatus]:
    """The table's files in an external bucket directory and at the bottom of its
    entropy-inject hash directories (`1001/1111/0010/10010010/`), where Java puts them."""
    found: list[FileStatus] = []
    for s in meta.files.list_dir(directory):
        if not s.is_dir:
            if depth in (0, len(ENTROPY_DIR_NAMES)) and s.name.startswith(layout.file_prefixes):
                found.append(s)
        elif depth < len(ENTROPY_DIR_NAMES) and re.fullmatch(ENTROPY_DIR_NAMES[depth], s.name):
            found += _external_bucket_files(meta, layout, s.path, depth + 1)
    return found


def _external_files(
    meta: TableMetadata, layout: ExternalLayout | None
) -> tuple[list[FileStatus], int]:
    """Files under the table's external data roots (data-file.external-paths) that look like
    its data files, and the bucket directories listed."""
    if layout is None:
        return [], 0
    buckets = [
        b
        for chunk in parallel_map(
            lambda root: _external_bucket_dirs(meta, root, layout.partition_prefixes),
            list(layout.roots),
        )
        for b in chunk
    ]
    listed = parallel_map(lambda d: _external_bucket_files(meta, layout, d), buckets)
    return [s for chunk in listed for s in chunk], len(buckets)


def _candidates(
    meta: TableMetadata, branches: list[Branch], layout: ExternalLayout | None
) -> list[FileStatus]:
    """Every file maintenance may judge: metadata, index, statistics and bucket directories,
    in the table and under its external data roots."""
    table = meta.table
    data = data_root(table)
    dirs = [meta.manifest_dir, index_root(table), f"{meta.root}/statistics"]
    dirs += _bucket_dirs(meta, data, len(table.partition_keys))
    listed = parallel_map(meta.files.list_dir, dirs)
    found = [s for chunk in listed for s in chunk if not s.is_dir]
    external, external_dirs = _external_files(meta, layout)
    found += external
    for b in branches:
        found += _non_record_files(meta, b.dir("snapshot"), SNAPSHOT_PREFIX)
        found += _non_record_files(meta, b.dir("changelog"), CHANGELOG_PREFIX)
        for kind in TEMP_ONLY_DIRS:
            found += _temp_files(meta, b.dir(kind))
    found = list({s.path: s for s in found}.values())  # an external root may be the table's
    log.info(
        "listed %d files in %d directories of %s (%d external files in %d bucket directories)",
        len(found),
        len(dirs),
        table.table_path,
        len(external),
        external_dirs,
    )
    return found


def _check_branches(meta: TableMetadata, branches: list[Branch]) -> None:
    """A branch without a schema is broken; its references cannot be trusted (Java aborts)."""
    broken = [b.name for b in branches[1:] if not meta.ids(b.dir("schema"), "schema-")]
    if broken:
        raise MaintenanceAbortedError(
            f"branches {broken} have no schema; check them before removing orphan files"
        )


def plan_orphan_removal(
    table: FileStoreTable,
    *,
    older_than_ms: int = DAY_MS,
    context: MaintenanceContext = DEFAULT_CONTEXT,
) -> OrphanPlan:
    """List old unreferenced files; reads only.

    Raises InvalidArgumentError (older-than not positive), InvalidOptionError (external-path options
    we cannot honour), UnsupportedLayoutError; not input: MaintenanceAbortedError.
    """
    if older_than_ms <= 0:
        raise InvalidArgumentError(
            "older-than must be positive: younger files may belong to a commit"
        )
    check_supported_layout(table.table_schema, operation=ORPHAN_REMOVAL)
    layout = external_layout(table)  # refuses external-path options we cannot honour
    meta = context.metadata(table)
    cutoff = context.clock.now_ms() - older_than_ms
    branches = meta.branches()
    _check_branches(meta, branches)
    scanned = _candidates(meta, branches, layout)
    old = [s for s in scanned if s.mtime_ms < cutoff]
    used = UsedFiles()
    for _ in range(2):
        # the second pass reads only snapshots, tags and changelogs that appeared meanwhile
        refs = [r for b in meta.branches() for r in referrers(meta, b)]
        collect_used(meta, refs, used)
    orphans = tuple(s for s in old if s.name not in used)
    log.info(
        "%d of %d files are older than the cutoff; %d are orphans (%d names in use)",
        len(old),
        len(scanned),
        len(orphans),
        len(used.names),
    )
    return OrphanPlan(table_name(table), cutoff, len(scanned), orphans)


def execute_orphan_removal(
    table: FileStoreTable, plan: OrphanPlan, *, context: MaintenanceContext = DEFAULT_CONTEXT
) -> OrphanResult:
    """Delete the plan's orphans; never a directory, never a file younger than the cutoff."""
    start = time.perf_counter()
    paths = [s.path for s in plan.orphans if not s.is_dir and s.mtime_ms < plan.cutoff_ms]
    deleted = delete_logged(context.table_files(table), paths, "orphan files")
    return replace(
        plan.preview(),
        orphans=tuple(paths),
        deleted=deleted,
        dry_run=False,
        seconds=time.perf_counter() - start,
    )


def remove_orphans(
    table: FileStoreTable,
    *,
    older_than: timedelta = timedelta(days=1),
    dry_run: bool = False,
    context: MaintenanceContext = DEFAULT_CONTEXT,
) -> OrphanResult:
    """Find and (unless dry_run) delete orphan files older than `older_than`.

    Raises InvalidArgumentError when `older_than` is not positive: younger files may belong
    to a commit still writing them; InvalidOptionError (external-path options we cannot
    honour), UnsupportedLayoutError; not input: MaintenanceAbortedError, TransientStoreError.
    """
    older_than_ms = timedelta_ms(older_than, "older_than")
    return run_planned(
        lambda: plan_orphan_removal(table, older_than_ms=older_than_ms, context=context),
        lambda plan: execute_orphan_removal(table, plan, context=context),
        dry_run=dry_run,
    )
