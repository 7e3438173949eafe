"""Snapshot and changelog expiry (ExpireSnapshotsImpl, ExpireChangelogImpl): plan, then execute.

Execution deletes in Paimon's order, data files, then manifests and lists, then the snapshot
(or changelog) files, then the EARLIEST hint, so a run that dies midway leaves every retained
snapshot readable and the next run finishes the job.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from datetime import timedelta

from dagster_paimon.errors import InvalidArgumentError, StaleMaintenancePlanError
from dagster_paimon.failpoints import (
    DATA_FILES_EXPIRED,
    METADATA_EXPIRED,
    RECORDS_EXPIRED,
    failpoint,
)
from dagster_paimon.format.metadata import Changelog, Snapshot
from dagster_paimon.format.table import FileStoreTable
from dagster_paimon.format.values import JSON
from dagster_paimon.maintenance.context import DEFAULT_CONTEXT, MaintenanceContext, table_name
from dagster_paimon.maintenance.deletion import (
    TagSkipper,
    added_in_changelogs,
    changelog_lists,
    data_files_to_delete,
    data_paths,
    deleted_in_deltas,
    lists_named,
    metadata_to_delete,
    unused,
    used_by_latest,
)
from dagster_paimon.maintenance.directories import (
    clean_empty_directories,
    clean_empty_directories_enabled,
)
from dagster_paimon.maintenance.guard import Seen, check_unchanged, seen
from dagster_paimon.maintenance.options import ExpireConfig, Retention, RetentionOverrides
from dagster_paimon.maintenance.references import collect_used, referrers
from dagster_paimon.results import DETAIL, METRIC, Reported, run_planned, timedelta_ms
from dagster_paimon.snapshot.metadata import (
    CHANGELOG_PREFIX,
    EARLIEST,
    LATEST,
    SNAPSHOT_PREFIX,
    TableMetadata,
)
from dagster_paimon.storage.files import delete_logged
from dagster_paimon.storage.snapshots import replace_file
from dagster_paimon.unsupported import EXPIRY, check_supported_layout

log = logging.getLogger(__name__)

SNAPSHOTS = "snapshots"
CHANGELOGS = "changelogs"


@dataclass(frozen=True)
class PlanGuard:
    """What planning saw protecting files; execution refuses to run if more appeared."""

    seen: Seen = field(default_factory=Seen)
    check_consumers: bool = True
    consumer_cutoff_ms: int | None = None


@dataclass(frozen=True)
class ExpiryPlan:
    """Which snapshots (or changelogs) expire and exactly which files that frees."""

    table: str
    target: str
    earliest_id: int | None = None
    end_id: int | None = None
    expired_ids: tuple[int, ...] = ()
    data_files: tuple[str, ...] = ()
    metadata_files: tuple[str, ...] = ()
    write_changelogs: bool = False
    guard: PlanGuard = field(default_factory=PlanGuard)

    @property
    def is_empty(self) -> bool:
        """Nothing to expire."""
        return not self.expired_ids

    def preview(self) -> ExpiryResult:
        """What executing the plan would delete."""
        return ExpiryResult(
            table=self.table,
            target=self.target,
            expired_ids=self.expired_ids,
            deleted_data_files=len(self.data_files),
            deleted_metadata_files=len(self.metadata_files),
            deleted_records=len(self.expired_ids),
            earliest=self.end_id if self.expired_ids else self.earliest_id,
            dry_run=True,
        )


@dataclass(frozen=True, kw_only=True)
class ExpiryResult(Reported):
    """What an expiry run removed (or, dry, would remove), with its metrics."""

    table: str
    target: str
    expired_ids: tuple[int, ...]
    deleted_data_files: int
    deleted_metadata_files: int
    deleted_records: int
    earliest: int | None
    dry_run: bool
    seconds: float = 0.0

    FIELDS = {
        "table": DETAIL,
        "target": DETAIL,
        "expired": METRIC,
        "deleted_files": METRIC,
        "deleted_data_files": METRIC,
        "deleted_metadata_files": METRIC,
        "deleted_records": METRIC,
        "earliest": METRIC,
        "dry_run": DETAIL,
        "seconds": METRIC,
    }

    @property
    def expired(self) -> tuple[int, ...]:
        """The ids expired: a list in the JSON, their number in the metrics."""
        return self.expired_ids

    @property
    def deleted_files(self) -> int:
        """Every file removed: data, metadata and the snapshot or changelog files."""
        return self.deleted_data_files + self.deleted_metadata_files + self.deleted_records

    def summary(self) -> str:
        """One human line."""
        kind = self.target[:-1]
        if not self.expired_ids:
            return f"{self.table}: no {kind} to expire (earliest {self.earliest})"
        verb = "would expire" if self.dry_run else "expired"
        ids = self.expired_ids
        return (
            f"{self.table}: {verb} {len(ids)} {self.target} ({ids[0]}..{ids[-1]}), "
            f"{self.deleted_files} files ({self.deleted_data_files} data), earliest {kind} "
            f"now {self.earliest}"
        )


def _guard(
    meta: TableMetadata,
    tags: list[tuple[str, Snapshot]],
    check_consumers: bool,
    consumer_cutoff_ms: int | None,
) -> PlanGuard:
    """The protections in force when planning."""
    return PlanGuard(
        seen=seen(meta, tags),
        check_consumers=check_consumers,
        consumer_cutoff_ms=consumer_cutoff_ms,
    )


def _branch_names(meta: TableMetadata) -> set[str]:
    """Every file some other branch's snapshots, tags or changelogs use (they share files)."""
    refs = [r for b in meta.branches()[1:] for r in referrers(meta, b)]
    return collect_used(meta, refs).names if refs else set()


def _skipping_set(
    meta: TableMetadata,
    keep: list[Snapshot],
    *,
    lenient: tuple[Snapshot, ...] = (),
    changelogs: tuple[Snapshot, ...] = (),
) -> set[str] | None:
    """Metadata names that retained snapshots, tags and changelogs need; None if unreadable.

    `lenient` snapshots are changelogs read as roots: their base list may already be gone.
    `changelogs` only need what reading their changes needs.
    """
    try:
        names: set[str] = set()
        for s in keep:
            names |= meta.metadata_files(s)[0]
        for s in lenient:
            names |= meta.metadata_files(s, missing_ok=True)[0]
        for c in changelogs:
            names |= meta.metadata_files(c, changelog_only=True, missing_ok=True)[0]
        return names
    except Exception as e:
        log.warning("cannot read what retained snapshots use; keeping all manifests: %s", e)
        return None


def _window(r: Retention, earliest: int, latest: int, consumer: int | None) -> tuple[int, int]:
    """(lo, hi): retain-max may expire below lo; nothing at or above hi may expire."""
    lo = max(latest - r.retain_max + 1, earliest)
    hi = latest - r.retain_min + 1
    if consumer is not None:
        hi = min(hi, consumer)
    return lo, min(hi, earliest + r.max_deletes)


def _expiry_end(
    candidates: dict[int, Snapshot],
    lo: int,
    hi: int,
    older_than_ms: int,
    *,
    next_snapshot: bool,
) -> int:
    """First id to keep: hi, or earlier where a snapshot is still younger than the retention.

    Snapshot expiry checks the next snapshot's age (Java's stronger protection); changelog
    expiry checks the changelog's own, with hi inclusive.
    """
    stop = hi if next_snapshot else hi + 1
    for i in range(lo, stop):
        probe = candidates.get(i + 1 if next_snapshot else i)
        if probe is not None and older_than_ms <= probe.time_millis:
            return i
    return hi


def _expiring(
    load: Callable[[Iterable[int]], list[Snapshot]],
    r: Retention,
    earliest: int,
    window: tuple[int, int],
    now_ms: int,
    *,
    next_snapshot: bool,
) -> tuple[dict[int, Snapshot], int] | None:
    """The records in the window and the first id to keep; None when nothing may expire."""
    lo, hi = window
    if hi <= earliest:
        return None
    loaded = {s.id: s for s in load(range(earliest, hi + 1))}
    cutoff = now_ms - r.time_retained_ms
    end = _expiry_end(loaded, lo, hi, cutoff, next_snapshot=next_snapshot)
    if end <= earliest or end not in loaded:
        return None
    return loaded, end


def _plan_snapshots(config: ExpireConfig, meta: TableMetadata, now_ms: int) -> ExpiryPlan:
    """Decide which snapshots expire and which files that frees; reads only."""
    name = table_name(meta.table)
    ids = meta.ids(meta.main.dir("snapshot"), SNAPSHOT_PREFIX)
    if not ids:
        return ExpiryPlan(name, SNAPSHOTS)
    earliest, latest = ids[0], ids[-1]
    r = config.snapshot
    cutoff = config.consumer_cutoff_ms(now_ms)
    holds = config.consumers_hold_snapshots
    consumer = meta.min_consumer_next(expired_before_ms=cutoff) if holds else None
    lo, hi = _window(r, earliest, latest, consumer)
    found = _expiring(meta.snapshots, r, earliest, (lo, hi), now_ms, next_snapshot=True)
    if found is None:
        return ExpiryPlan(name, SNAPSHOTS, earliest, earliest)
    loaded, end = found
    in_range = [loaded[i] for i in sorted(loaded) if i <= end]
    begin = in_range[0].id
    expiring = [s for s in in_range if s.id < end]
    decoupled = config.changelog_decoupled
    tags = meta.tags()
    log.info(
        "expiring snapshots %d..%d of %s (latest %d, %d tags, decoupled changelog: %s)",
        begin,
        end - 1,
        name,
        latest,
        len(tags),
        decoupled,
    )
    protected = _branch_names(meta)
    refs = data_files_to_delete(
        meta,
        [s for s in in_range if s.id > begin],
        TagSkipper(meta, [t for _, t in tags]),
        keep_append_files=decoupled and not config.produce_changelog,
    )
    if not decoupled:
        refs += added_in_changelogs(meta, expiring)
    data = data_paths(meta, refs, protected)
    changelogs = meta.changelogs(meta.ids(meta.main.dir("changelog"), CHANGELOG_PREFIX))
    skipping = _skipping_set(
        meta, [loaded[end], *(t for _, t in tags)], changelogs=tuple(changelogs)
    )
    metadata: list[str] = []
    if skipping is not None:
        metadata = metadata_to_delete(
            meta,
            expiring,
            skipping | protected,
            lists_of=lists_named(
                data_lists=not decoupled or config.produce_changelog,
                changelog_lists=not decoupled,
            ),
        )
    return ExpiryPlan(
        name,
        SNAPSHOTS,
        earliest,
        end,
        tuple(s.id for s in expiring),
        tuple(data),
        tuple(metadata),
        write_changelogs=decoupled,
        guard=_guard(meta, tags, check_consumers=holds, consumer_cutoff_ms=cutoff),
    )


def _plan_changelogs(config: ExpireConfig, meta: TableMetadata, now_ms: int) -> ExpiryPlan:
    """Decide which long-lived changelogs expire and which files that frees; reads only."""
    name = table_name(meta.table)
    snapshot_ids = meta.ids(meta.main.dir("snapshot"), SNAPSHOT_PREFIX)
    changelog_ids = meta.ids(meta.main.dir("changelog"), CHANGELOG_PREFIX)
    if not snapshot_ids or not changelog_ids:
        return ExpiryPlan(name, CHANGELOGS, changelog_ids[0] if changelog_ids else None)
    earliest, latest_changelog = changelog_ids[0], changelog_ids[-1]
    r = config.changelog
    cutoff = config.consumer_cutoff_ms(now_ms)
    consumer = meta.min_consumer_next(expired_before_ms=cutoff)
    lo, hi = _window(r, earliest, snapshot_ids[-1], consumer)
    window = (lo, min(hi, latest_changelog))
    found = _expiring(meta.changelogs, r, earliest, window, now_ms, next_snapshot=False)
    if found is None:
        return ExpiryPlan(name, CHANGELOGS, earliest, earliest)
    loaded, end = found
    expiring = [loaded[i] for i in sorted(loaded) if i < end]
    tags = meta.tags()
    log.info("expiring changelogs %d..%d of %s", earliest, end - 1, name)
    protected = _branch_names(meta)
    skipper = TagSkipper(meta, [t for _, t in tags])
    skipper.prefetch([c.id for c in expiring])
    with_list = [c for c in expiring if c.changelog_manifest_list]
    refs = added_in_changelogs(meta, with_list)
    deltas = deleted_in_deltas(meta, [c for c in expiring if not c.changelog_manifest_list])
    for changelog_id, deleted in deltas.items():
        skip = skipper.skip_set(changelog_id)
        if deleted is not None and skip is not None:
            refs += [ref for ref in deleted if ref.file_name not in skip]
    earliest_snapshot = meta.snapshot(snapshot_ids[0])
    keep = [*(t for _, t in tags), *filter(None, [earliest_snapshot])]
    skipping = _skipping_set(meta, keep, lenient=(loaded[end],))
    metadata: list[str] = []
    if skipping is not None:
        metadata = metadata_to_delete(
            meta, expiring, skipping | protected, lists_of=changelog_lists, index=False
        )
    return ExpiryPlan(
        name,
        CHANGELOGS,
        earliest,
        end,
        tuple(c.id for c in expiring),
        tuple(data_paths(meta, refs, protected)),
        tuple(dict.fromkeys(metadata)),
        guard=_guard(meta, tags, check_consumers=True, consumer_cutoff_ms=cutoff),
    )


# how often _expire() plans again when a tag, branch or consumer appears meanwhile
STALE_REPLANS = 2


def plan_expiry(
    table: FileStoreTable,
    target: str = SNAPSHOTS,
    *,
    overrides: RetentionOverrides | None = None,
    context: MaintenanceContext = DEFAULT_CONTEXT,
) -> ExpiryPlan:
    """Which snapshots (or long-lived changelogs) expire and which files that frees; reads only.

    Retention comes from the table's snapshot.* (or changelog.*) options with `overrides` on
    top; the context's clock is what the time retention is measured against.

    Raises InvalidArgumentError (target; overrides: retain-min < 1, retain-max < retain-min, max-
    deletes < 1, a negative time), InvalidOptionError (malformed retention options),
    UnsupportedLayoutError; not input: MaintenanceAbortedError (an unreadable consumer, tag or
    branch).
    """
    return _plan(context.metadata(table), target, overrides, context.clock.now_ms())


def _plan(
    meta: TableMetadata, target: str, overrides: RetentionOverrides | None, now_ms: int
) -> ExpiryPlan:
    """plan_expiry through a given metadata reader (whose manifest reads it keeps)."""
    if target not in (SNAPSHOTS, CHANGELOGS):
        raise InvalidArgumentError(
            f"target must be {SNAPSHOTS!r} or {CHANGELOGS!r}, got {target!r}"
        )
    table = meta.table
    check_supported_layout(table.table_schema, operation=EXPIRY)
    options = table.table_schema.options
    if target == SNAPSHOTS:
        config = ExpireConfig.from_table_options(options, overrides)
        return _plan_snapshots(config, meta, now_ms)
    config = ExpireConfig.from_table_options(options, changelog_overrides=overrides)
    return _plan_changelogs(config, meta, now_ms)


def _check_guard(meta: TableMetadata, plan: ExpiryPlan, end: int) -> None:
    """Refuse to run a plan that a tag, branch or consumer created since would be hurt by."""
    guard = plan.guard
    check_unchanged(
        meta,
        guard.seen,
        tags_on=lambda snapshot_id: snapshot_id < end,
        new_branches=True,
        consumers_from=end if guard.check_consumers else None,
        consumer_cutoff_ms=guard.consumer_cutoff_ms,
    )


def _write_changelogs(meta: TableMetadata, ids: tuple[int, ...]) -> None:
    """Keep expiring snapshots as long-lived changelogs (decoupled changelog lifecycle)."""
    directory = meta.main.dir("changelog")
    written = []
    for snapshot in meta.snapshots(ids):
        text = JSON.to_json(Changelog.from_snapshot(snapshot), indent=2)
        replace_file(meta.file_io, meta.changelog_path(snapshot.id), text)
        written.append(snapshot.id)
    if written:
        meta.write_hint(directory, LATEST, written[-1])
        if not meta.file_io.exists(f"{directory}/{EARLIEST}"):
            existing = meta.ids(directory, CHANGELOG_PREFIX)
            meta.write_hint(directory, EARLIEST, existing[0] if existing else written[0])


def execute_expiry(
    table: FileStoreTable, plan: ExpiryPlan, *, context: MaintenanceContext = DEFAULT_CONTEXT
) -> ExpiryResult:
    """Delete what the plan frees, in Paimon's order; re-checks protections first."""
    return _execute(context.metadata(table), plan)


def _execute(meta: TableMetadata, plan: ExpiryPlan) -> ExpiryResult:
    """execute_expiry through a given metadata reader."""
    start = time.perf_counter()
    files = meta.files
    if plan.is_empty or plan.end_id is None:
        return replace(plan.preview(), dry_run=False, seconds=time.perf_counter() - start)
    end = plan.end_id
    _check_guard(meta, plan, end)
    in_use = used_by_latest(meta)
    data = unused(plan.data_files, in_use, "data files")
    metadata = unused(plan.metadata_files, in_use, "metadata files")
    deleted_data = delete_logged(files, data, "data files")
    if clean_empty_directories_enabled(meta.table.table_schema.options):
        clean_empty_directories(meta.root, data)
    failpoint(DATA_FILES_EXPIRED)
    deleted_metadata = delete_logged(files, metadata, "metadata files")
    failpoint(METADATA_EXPIRED)
    if plan.target == SNAPSHOTS:
        if plan.write_changelogs:
            _write_changelogs(meta, plan.expired_ids)
        records = [meta.snapshot_path(i) for i in plan.expired_ids]
        directory, prefix = meta.main.dir("snapshot"), SNAPSHOT_PREFIX
    else:
        records = [meta.changelog_path(i) for i in plan.expired_ids]
        directory, prefix = meta.main.dir("changelog"), CHANGELOG_PREFIX
    deleted_records = delete_logged(files, records, plan.target)
    failpoint(RECORDS_EXPIRED)
    meta.write_hint(directory, EARLIEST, end)
    remaining = meta.ids(directory, prefix)
    log.info(
        "expired %d %s of %s: %d data and %d metadata files deleted",
        len(plan.expired_ids),
        plan.target,
        plan.table,
        deleted_data,
        deleted_metadata,
    )
    return ExpiryResult(
        table=plan.table,
        target=plan.target,
        expired_ids=plan.expired_ids,
        deleted_data_files=deleted_data,
        deleted_metadata_files=deleted_metadata,
        deleted_records=deleted_records,
        earliest=remaining[0] if remaining else None,
        dry_run=False,
        seconds=time.perf_counter() - start,
    )


def _expire(
    table: FileStoreTable,
    target: str,
    overrides: RetentionOverrides,
    dry_run: bool,
    context: MaintenanceContext,
) -> ExpiryResult:
    """Expire snapshots (or long-lived changelogs) by retention options and the overrides.

    A plan that a tag, branch or consumer made stale before anything was deleted is made again,
    reading only the manifests that snapshots committed since added.

    Raises as plan_expiry; then CommitConflictError, TransientStoreError (not input).
    """
    meta = context.metadata(table)
    for replans in range(STALE_REPLANS + 1):
        try:
            return run_planned(
                lambda: _plan(meta, target, overrides, context.clock.now_ms()),
                lambda plan: _execute(meta, plan),
                dry_run=dry_run,
            )
        except StaleMaintenancePlanError as e:
            if replans == STALE_REPLANS:
                raise
            log.info("%s; planning again (%d manifests read so far)", e, meta.manifests_read)
    raise AssertionError("unreachable: the last attempt returns or raises")


def retention_overrides(
    *,
    older_than: timedelta | None = None,
    retain_min: int | None = None,
    retain_max: int | None = None,
    max_deletes: int | None = None,
) -> RetentionOverrides:
    """The overrides of the public arguments, each checked; None keeps the table's option.

    Raises InvalidArgumentError for a negative duration or a count below 1.
    """
    # named as the CLI flags and Retention.validate name them
    for name, count in (
        ("retain-min", retain_min),
        ("retain-max", retain_max),
        ("max-deletes", max_deletes),
    ):
        if count is not None and (isinstance(count, bool) or not isinstance(count, int)):
            raise InvalidArgumentError(f"{name} must be an int, got {count!r}")
        if count is not None and count < 1:
            raise InvalidArgumentError(f"{name} must be >= 1, got {count}")
    if retain_min is not None and retain_max is not None and retain_max < retain_min:
        raise InvalidArgumentError(
            f"retain-max ({retain_max}) must not be less than retain-min ({retain_min})"
        )
    return RetentionOverrides(
        retain_min=retain_min,
        retain_max=retain_max,
        time_retained_ms=None if older_than is None else timedelta_ms(older_than, "older_than"),
        max_deletes=max_deletes,
    )


def expire_snapshots(
    table: FileStoreTable,
    *,
    older_than: timedelta | None = None,
    retain_min: int | None = None,
    retain_max: int | None = None,
    max_deletes: int | None = None,
    dry_run: bool = False,
    context: MaintenanceContext = DEFAULT_CONTEXT,
) -> ExpiryResult:
    """Expire snapshots by snapshot.* retention; tags, consumers and branches keep theirs.

    Each argument left None keeps the table's option: `older_than` snapshot.time-retained,
    `retain_min`/`retain_max` snapshot.num-retained.min/max, `max_deletes`
    snapshot.expire.limit. Raises InvalidArgumentError for a negative duration, a count below
    1 or retain_max below retain_min; InvalidOptionError (malformed retention options),
    UnsupportedLayoutError; not input: MaintenanceAbortedError, TransientStoreError.
    """
    overrides = retention_overrides(
        older_than=older_than, retain_min=retain_min, retain_max=retain_max, max_deletes=max_deletes
    )
    return _expire(table, SNAPSHOTS, overrides, dry_run, context)


def expire_changelogs(
    table: FileStoreTable,
    *,
    older_than: timedelta | None = None,
    retain_min: int | None = None,
    retain_max: int | None = None,
    max_deletes: int | None = None,
    dry_run: bool = False,
    context: MaintenanceContext = DEFAULT_CONTEXT,
) -> ExpiryResult:
    """Expire long-lived changelogs by changelog.* retention (falling back to snapshot.*).

    Each argument left None keeps the table's option (changelog.time-retained,
    changelog.num-retained.min/max, snapshot.expire.limit). Raises InvalidArgumentError for a
    negative duration, a count below 1 or retain_max below retain_min; InvalidOptionError
    (malformed retention options), UnsupportedLayoutError; not input: MaintenanceAbortedError,
    TransientStoreError.
    """
    overrides = retention_overrides(
        older_than=older_than, retain_min=retain_min, retain_max=retain_max, max_deletes=max_deletes
    )
    return _expire(table, CHANGELOGS, overrides, dry_run, context)
