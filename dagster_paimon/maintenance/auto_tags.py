"""Automatic tags (Java's TagAutoManager): TagAutoCreation, TagBatchCreation, and the retention
they apply (tag.num-retained-max, then expiry by time retained).

Periodic modes (process-time, watermark) tag, for every period that ended since the newest auto
tag, the first snapshot past it; batch mode tags the latest snapshot `batch-write-<date>`.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, replace
from datetime import datetime
from itertools import groupby

from dagster_paimon.errors import MaintenanceAbortedError, transient_errors
from dagster_paimon.format.metadata import Snapshot
from dagster_paimon.format.table import FileStoreTable
from dagster_paimon.maintenance.context import (
    DEFAULT_CONTEXT,
    Clock,
    FixedClock,
    MaintenanceContext,
    table_name,
)
from dagster_paimon.maintenance.tag_deletion import TagDeleter, expired_tags
from dagster_paimon.maintenance.tag_files import read_tags, snapshot_text, write_tag
from dagster_paimon.maintenance.tag_options import EPOCH, PeriodHandler, TagOptions, local_time
from dagster_paimon.maintenance.tag_results import TagInfo, TagResult
from dagster_paimon.maintenance.tag_success import finish_creation
from dagster_paimon.snapshot.metadata import SNAPSHOT_PREFIX, TableMetadata
from dagster_paimon.unsupported import TAGS, check_supported_layout

log = logging.getLogger(__name__)

LONG_MIN = -(2**63)
BATCH_TAG_PREFIX = "batch-write-"


@dataclass
class _AutoState:
    """What TagAutoCreation restores from the newest auto tag: next snapshot, next tag time."""

    next_snapshot: int
    next_tag: datetime | None
    newest: str | None = None


def _restore(meta: TableMetadata, handler: PeriodHandler, earliest: int) -> _AutoState:
    """The newest auto tag (by its time) decides where creation resumes."""
    auto = [(t, handler.to_time(t.name)) for t in read_tags(meta) if handler.is_auto(t.name)]
    if not auto:
        return _AutoState(earliest, None)
    newest, when = max(auto, key=lambda tw: tw[1] or EPOCH)
    assert when is not None
    return _AutoState(newest.snapshot_id + 1, when + handler.period, newest.name)


def _tag_time(snapshot: Snapshot, options: TagOptions) -> datetime | None:
    """TagTimeExtractor: the commit's process time, or its watermark (None if it has none)."""
    if options.mode == "process-time":
        return local_time(snapshot.time_millis, options.process_zone)
    watermark = snapshot.watermark
    if watermark is None or watermark == LONG_MIN:
        return None
    return local_time(watermark, options.watermark_zone)


def _retain_max(deleter: TagDeleter, handler: PeriodHandler, limit: int) -> None:
    """tag.num-retained-max: delete the oldest auto tags (by snapshot) beyond the limit."""
    auto: dict[int, list[TagInfo]] = {}
    for t in read_tags(deleter.meta):
        if handler.is_auto(t.name) and t.name not in deleter.deleted:
            auto.setdefault(t.snapshot_id, []).append(t)
    excess = len(auto) - limit
    for snapshot_id in sorted(auto)[: max(excess, 0)]:
        tags = auto[snapshot_id]
        if len(tags) != 1:
            raise MaintenanceAbortedError(
                f"more than one auto-created tag of snapshot {snapshot_id}: "
                f"{', '.join(t.name for t in tags)}"
            )
        deleter.delete(tags[0])


def create_automatic_tags(
    table: FileStoreTable, *, dry_run: bool = False, context: MaintenanceContext = DEFAULT_CONTEXT
) -> TagResult:
    """What Paimon's writers do after each commit (TagAutoManager): create the tags of every
    period that ended since the last auto tag, by tag.automatic-creation (process-time,
    watermark; batch: `batch-write-<date>` on the latest snapshot), tag.creation-period,
    tag.creation-delay and tag.period-formatter; delete the oldest auto tags beyond
    tag.num-retained-max; then expire tags by time retained (tag.time-expire-enabled).

    The context's clock is the tags' create time and what their retention is measured against.
    Raises InvalidOptionError (malformed tag options); not input: MaintenanceAbortedError.
    """
    with transient_errors(table_unchanged=True if dry_run else None):
        start = time.perf_counter()
        check_supported_layout(table.table_schema, operation=TAGS)
        meta = context.metadata(table)
        options = TagOptions.from_table_options(table.table_schema.options)
        clock = FixedClock.at(context.clock.now())  # one instant for the whole run
        deleter = TagDeleter(meta, dry_run, options.success_file)
        created: list[str] = []
        if options.mode == "batch":
            _create_batch(meta, options, deleter, created, clock)
        elif options.mode != "none":
            _create_periodic(meta, options, deleter, created, clock)
        if options.time_expire_enabled:
            expire_by_time(deleter, clock.now())
        result = deleter.result(table_name(table), "auto", created)
        return replace(result, seconds=time.perf_counter() - start)


def expire_by_time(deleter: TagDeleter, now: datetime) -> None:
    """TagTimeExpire within a run: delete each expired tag the run has not deleted yet."""
    for tag in expired_tags(read_tags(deleter.meta), now):
        if tag.name not in deleter.deleted:
            deleter.delete(tag)


def _create_periodic(
    meta: TableMetadata,
    options: TagOptions,
    deleter: TagDeleter,
    created: list[str],
    clock: Clock,
) -> None:
    """TagAutoCreation.run over every snapshot from where the auto tags left off."""
    handler = options.handler
    assert handler is not None
    ids = meta.ids(meta.main.dir("snapshot"), SNAPSHOT_PREFIX)
    if not ids:
        return
    state = _restore(meta, handler, ids[0])
    if options.success_file and state.newest is not None and not deleter.dry_run:
        # a run killed after its newest tag's file resumes past that tag: finish it here
        finish_creation(meta, state.newest, clock.now_ms())
    existing = {t.name for t in read_tags(meta)}
    for snapshot_id in (i for i in ids if i >= state.next_snapshot):
        snapshot = meta.snapshot(snapshot_id)
        if snapshot is None:
            continue  # expired meanwhile
        when = _tag_time(snapshot, options)
        if when is None:
            continue
        if state.next_tag is not None and when - options.delay < state.next_tag + handler.period:
            continue
        this_tag = handler.previous_tag(when)
        if options.automatic_completion and state.next_tag is not None:
            this_tag = state.next_tag
        name = handler.to_name(this_tag)
        if name not in existing or name in deleter.deleted:
            if not deleter.dry_run:
                _, text = snapshot_text(meta, snapshot_id)
                write_tag(
                    meta,
                    name,
                    snapshot_id,
                    text,
                    options.default_time_retained,
                    clock.now(),
                    options,
                    clock.now_ms(),
                )
            log.info("auto tag %s on snapshot %d", name, snapshot_id)
            created.append(name)
            existing.add(name)
        state.next_tag = this_tag + handler.period
        if options.num_retained_max is not None and not deleter.dry_run:
            _retain_max(deleter, handler, options.num_retained_max)
    if options.num_retained_max is not None and deleter.dry_run:
        _dry_retain_max(meta, handler, options.num_retained_max, deleter, created, ids)


def _dry_retain_max(
    meta: TableMetadata,
    handler: PeriodHandler,
    limit: int,
    deleter: TagDeleter,
    created: list[str],
    ids: list[int],
) -> None:
    """A dry run's num-retained-max: the tags created would be the newest, so the oldest of
    the existing ones (and, past them, of the created ones) would go."""
    existing = sorted(
        (t for t in read_tags(meta) if handler.is_auto(t.name)), key=lambda t: t.snapshot_id
    )
    excess = len(existing) + len(created) - limit
    for tag in existing[: max(excess, 0)]:
        deleter.delete(tag)
    for name in created[: max(excess - len(existing), 0)]:
        deleter.deleted.append(name)


def _create_batch(
    meta: TableMetadata,
    options: TagOptions,
    deleter: TagDeleter,
    created: list[str],
    clock: Clock,
) -> None:
    """TagBatchCreation: tag the latest snapshot `batch-write-<yyyy-MM-dd>` (or the customized
    name), replacing a tag of that name, then keep at most tag.num-retained-max tags."""
    ids = meta.ids(meta.main.dir("snapshot"), SNAPSHOT_PREFIX)
    if not ids:
        return
    snapshot_id, text = snapshot_text(meta, ids[-1])
    snapshot = meta.snapshot(snapshot_id)
    assert snapshot is not None
    day = local_time(snapshot.time_millis, options.process_zone)
    name = options.batch_name or f"{BATCH_TAG_PREFIX}{day:%Y-%m-%d}"
    tags = {t.name: t for t in read_tags(meta)}
    if name in tags:
        deleter.delete(tags[name])
    if not deleter.dry_run:
        write_tag(
            meta,
            name,
            snapshot_id,
            text,
            options.default_time_retained,
            clock.now(),
            options,
            clock.now_ms(),
        )
    created.append(name)
    limit = options.num_retained_max
    if limit is None:
        return
    # the tag just written counts, even when it replaced one of its name (Java's tagCount)
    remaining = [t for t in read_tags(meta) if t.name not in deleter.deleted and t.name != name]
    remaining.append(replace_info(name, snapshot_id, snapshot.time_millis))
    remaining.sort(key=lambda t: t.snapshot_id)  # Java orders a snapshot's tags by file age
    count = len(remaining)
    for _, group in groupby(remaining, key=lambda t: t.snapshot_id):
        of_snapshot = list(group)
        if count - len(of_snapshot) > limit:  # deleteAllTagsOfOneSnapshot: no callbacks
            for tag in of_snapshot:
                deleter.delete(tag, notify=False)
            count -= len(of_snapshot)
            continue
        for tag in of_snapshot[: max(count - limit, 0)]:  # deleteTag, one by one
            deleter.delete(tag)
        break


def replace_info(name: str, snapshot_id: int, time_ms: int) -> TagInfo:
    """A tag a dry run would have created."""
    return TagInfo(name=name, snapshot_id=snapshot_id, commit_time_ms=time_ms)
