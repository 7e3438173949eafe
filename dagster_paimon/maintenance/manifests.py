"""Manifest compaction (Java's ManifestFileMerger), committed as a COMPACT snapshot.

Every commit already merges manifests as Paimon's does (commit/manifest_merge.py), but
pypaimon's commits never do, and a forced full merge (Java's compact_manifest procedure) drops
every DELETE entry whatever the thresholds. Merging rewrites the latest snapshot's manifests into a
smaller set and commits it as the base list of a COMPACT snapshot with an empty delta: the
table's contents do not change. Replaced manifests stay for older snapshots; expiry removes them.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace

from dagster_paimon.commit.manifest_merge import (
    EntryReader,
    ManifestMergeOptions,
    ManifestWriter,
    MergeOutcome,
    merge_manifests,
)
from dagster_paimon.commit.producers import ManifestCompactProducer
from dagster_paimon.format.manifest import ManifestEntry, ManifestFileMeta, TableManifests
from dagster_paimon.format.metadata import Snapshot
from dagster_paimon.format.table import FileStoreTable
from dagster_paimon.io.filekind import ADD
from dagster_paimon.maintenance.context import DEFAULT_CONTEXT, MaintenanceContext, table_name
from dagster_paimon.results import DETAIL, METRIC, Reported, run_planned
from dagster_paimon.unsupported import MANIFEST_COMPACTION, check_supported_layout

log = logging.getLogger(__name__)

PENDING_PREFIX = "(pending-"


class DeferredWriter:
    """A planning writer: estimates the manifests entries would make and keeps the entries.

    Each write returns placeholders (one per target size of estimated bytes) sharing a group;
    `materialize` writes every group for real, in order, once the plan is executed.
    """

    def __init__(self, inputs: Sequence[ManifestFileMeta], target_size: int):
        entries = sum(m.num_added_files + m.num_deleted_files for m in inputs)
        self.bytes_per_entry = sum(m.file_size for m in inputs) / max(1, entries)
        self.target_size = target_size
        self.groups: list[list[ManifestEntry]] = []

    def write(self, entries: list[ManifestEntry]) -> list[ManifestFileMeta]:
        """Placeholders named after their group, with estimated sizes."""
        if not entries:
            return []
        group = len(self.groups)
        self.groups.append(entries)
        size = int(len(entries) * self.bytes_per_entry)
        count = max(1, math.ceil(size / self.target_size))
        deletes = sum(1 for e in entries if e.kind != ADD)
        return [
            ManifestFileMeta(
                file_name=f"{PENDING_PREFIX}{group}-{n})",
                file_size=size // count,
                num_added_files=len(entries) - deletes,
                num_deleted_files=deletes,
                partition_stats=None,
                schema_id=0,
            )
            for n in range(count)
        ]

    def materialize(
        self, manifests: list[ManifestFileMeta], writer: ManifestWriter
    ) -> list[ManifestFileMeta]:
        """The manifest list with every placeholder group written by `writer`."""
        result: list[ManifestFileMeta] = []
        written: set[str] = set()
        for m in manifests:
            if not m.file_name.startswith(PENDING_PREFIX):
                result.append(m)
                continue
            group = m.file_name[len(PENDING_PREFIX) :].split("-", 1)[0]
            if group not in written:
                written.add(group)
                result.extend(writer.write(self.groups[int(group)]))
        return result


@dataclass(frozen=True, kw_only=True)
class ManifestCompactionResult(Reported):
    """What compact-manifests committed (or, dry, would commit), with its metrics."""

    table: str
    snapshot_id: int | None
    base_snapshot_id: int | None
    full: bool
    dry_run: bool
    mode: str | None
    manifests_before: int
    manifests_after: int
    rewritten_manifests: int
    manifests_read: int = 0
    seconds: float = 0.0

    FIELDS = {
        "table": DETAIL,
        "snapshot_id": METRIC,
        "base_snapshot_id": DETAIL,
        "manifests_before": METRIC,
        "manifests_after": METRIC,
        "rewritten_manifests": METRIC,
        "manifests_read": METRIC,
        "mode": DETAIL,
        "full": DETAIL,
        "dry_run": DETAIL,
        "seconds": METRIC,
    }

    def summary(self) -> str:
        """One human line."""
        change = f"{self.manifests_before} -> {self.manifests_after} manifests"
        if self.dry_run:
            return f"{self.table}: would merge ({self.mode or 'nothing to do'}), {change} (dry run)"
        if self.snapshot_id is None:
            return f"{self.table}: manifests need no compaction ({self.manifests_before})"
        return f"{self.table}: committed snapshot {self.snapshot_id} ({self.mode}), {change}"


@dataclass(frozen=True)
class ManifestCompactionPlan:
    """The merge of one snapshot's manifests, decided with the merged entries kept in memory."""

    table: str
    full: bool
    base_snapshot_id: int | None
    manifests_before: int = 0
    outcome: MergeOutcome | None = None
    pending: DeferredWriter | None = None
    read: EntryReader | None = None

    def preview(self) -> ManifestCompactionResult:
        """The merge, with the number of rolled output manifests estimated."""
        outcome = self.outcome
        return ManifestCompactionResult(
            table=self.table,
            snapshot_id=None,
            base_snapshot_id=self.base_snapshot_id,
            full=self.full,
            dry_run=True,
            mode=outcome.mode if outcome else None,
            manifests_before=self.manifests_before,
            manifests_after=len(outcome.manifests) if outcome else self.manifests_before,
            rewritten_manifests=outcome.rewritten if outcome else 0,
            manifests_read=self.read.manifests_read if self.read else 0,
        )


def _merge_options(table: FileStoreTable, full: bool) -> ManifestMergeOptions:
    """The table's manifest.* options, or Java's forced full compaction."""
    options = ManifestMergeOptions.from_table_options(table.table_schema.options)
    return options.forced_full() if full else options


def _merge(
    table: FileStoreTable,
    inputs: list[ManifestFileMeta],
    options: ManifestMergeOptions,
    writer: ManifestWriter,
    read: EntryReader,
) -> tuple[int, MergeOutcome]:
    """(manifests before, merge outcome) of a snapshot's manifests."""
    outcome = merge_manifests(inputs, read, writer, options, partitioned=bool(table.partition_keys))
    return len(inputs), outcome


def plan_manifest_compaction(
    table: FileStoreTable, *, full: bool = False
) -> ManifestCompactionPlan:
    """Merge the latest snapshot's manifests in memory; nothing is written.

    Raises InvalidOptionError (malformed manifest.* options), UnsupportedLayoutError; not input:
    CorruptMetadataError.
    """
    check_supported_layout(table.table_schema, operation=MANIFEST_COMPACTION)
    name = table_name(table)
    latest = table.snapshot_manager().get_latest_snapshot()
    if latest is None:
        return ManifestCompactionPlan(name, full, None)
    options = _merge_options(table, full)
    inputs = TableManifests(table).all(latest)
    pending = DeferredWriter(inputs, options.target_size)
    read = EntryReader(table)
    before, outcome = _merge(table, inputs, options, pending, read)
    return ManifestCompactionPlan(name, full, latest.id, before, outcome, pending, read)


class _Merges:
    """ManifestMerge for the commit: the plan's merge on its base, a fresh merge after a race."""

    def __init__(self, table: FileStoreTable, plan: ManifestCompactionPlan):
        self.table = table
        self.plan = plan
        self.read = plan.read or EntryReader(table)
        self.outcomes: dict[int, tuple[int, MergeOutcome]] = {}

    def merged(self, latest: Snapshot, writer: ManifestWriter) -> list[ManifestFileMeta]:
        """The merged manifests of `latest`, written by this attempt's writer."""
        plan = self.plan
        if latest.id == plan.base_snapshot_id and plan.outcome and plan.pending:
            written = plan.pending.materialize(plan.outcome.manifests, writer)
            outcome = replace(plan.outcome, manifests=written)
            self.outcomes[latest.id] = (plan.manifests_before, outcome)
        else:
            options = _merge_options(self.table, plan.full)
            inputs = TableManifests(self.table).all(latest)
            self.outcomes[latest.id] = _merge(self.table, inputs, options, writer, self.read)
        return self.outcomes[latest.id][1].manifests


def execute_manifest_compaction(
    table: FileStoreTable,
    plan: ManifestCompactionPlan,
    *,
    context: MaintenanceContext = DEFAULT_CONTEXT,
) -> ManifestCompactionResult:
    """Write the merged manifests and commit them as the base list of a COMPACT snapshot.

    A commit that lost a race merges the new latest snapshot's manifests again. Manifests of
    failed or losing attempts are removed; the table is unchanged on any failure.

    Raises no input error; CommitConflictError, TransientStoreError leave the table unchanged.
    """
    start = time.perf_counter()
    result = replace(plan.preview(), dry_run=False, manifests_after=plan.manifests_before)
    if plan.outcome is None or plan.outcome.mode is None:
        return replace(result, mode=None, rewritten_manifests=0)
    merges = _Merges(table, plan)
    producer = ManifestCompactProducer(table, merges, snapshot_writer=context.snapshot_writer)
    committed = producer.commit().snapshot
    base_id = committed.id - 1
    before, outcome = merges.outcomes[base_id]
    log.info(
        "compacted manifests of %s (%s): %d -> %d in snapshot %d",
        plan.table,
        outcome.mode,
        before,
        len(outcome.manifests),
        committed.id,
    )
    return replace(
        result,
        snapshot_id=committed.id,
        base_snapshot_id=base_id,
        mode=outcome.mode,
        manifests_before=before,
        manifests_after=len(outcome.manifests),
        rewritten_manifests=outcome.rewritten,
        manifests_read=merges.read.manifests_read,
        seconds=time.perf_counter() - start,
    )


def compact_manifests(
    table: FileStoreTable,
    *,
    full: bool = False,
    dry_run: bool = False,
    context: MaintenanceContext = DEFAULT_CONTEXT,
) -> ManifestCompactionResult:
    """Merge the latest snapshot's manifests and, unless dry_run, commit them.

    full forces a full compaction whatever the thresholds (Java's compact_manifest procedure);
    otherwise the table's manifest.* options decide, exactly as at commit time.
    Raises InvalidOptionError (malformed manifest.* options), UnsupportedLayoutError; not input:
    CommitConflictError, CorruptMetadataError, TransientStoreError.
    """
    return run_planned(
        lambda: plan_manifest_compaction(table, full=full),
        lambda plan: execute_manifest_compaction(table, plan, context=context),
        dry_run=dry_run,
    )
