"""Tags: create, list, delete (with the files only a tag kept alive), expire, create automatically.

Ports Paimon 2.0's TagManager, TagDeletion, TagTimeExpire, TagAutoCreation, TagTimeExtractor and
TagPeriodHandler (release-2.0.0). The public operations are here; the modules they stand on:
tag_options.py (the tag.* options, periods), tag_files.py (reading and writing tag files),
tag_success.py (success files, `tag.create-success-file`), tag_deletion.py (deleting tags and
the files only they kept alive), auto_tags.py (automatic creation), tag_results.py.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import timedelta

from dagster_paimon.errors import TagExistsError
from dagster_paimon.format.table import FileStoreTable
from dagster_paimon.maintenance.auto_tags import create_automatic_tags
from dagster_paimon.maintenance.context import (
    DEFAULT_CONTEXT,
    Clock,
    MaintenanceContext,
    table_name,
)
from dagster_paimon.maintenance.tag_deletion import (
    execute_tag_removal,
    expired_tags,
    plan_tag_removal,
)
from dagster_paimon.maintenance.tag_files import (
    check_name,
    find_tag,
    latest_snapshot_id,
    read_tags,
    snapshot_text,
    tag_path,
    tagged_snapshot_id,
    write_tag,
)
from dagster_paimon.maintenance.tag_options import TagOptions, success_file_enabled
from dagster_paimon.maintenance.tag_results import TagInfo, TagResult
from dagster_paimon.maintenance.tag_success import finish_creation, success_file_exists
from dagster_paimon.results import run_planned, timedelta_ms
from dagster_paimon.snapshot.metadata import TableMetadata
from dagster_paimon.unsupported import TAGS, check_supported_layout

__all__ = [
    "TagInfo",
    "TagResult",
    "create_automatic_tags",
    "create_tag",
    "delete_tag",
    "execute_tag_creation",
    "expire_tags",
    "list_tags",
    "plan_tag_creation",
]

log = logging.getLogger(__name__)


def list_tags(
    table: FileStoreTable, *, context: MaintenanceContext = DEFAULT_CONTEXT
) -> list[TagInfo]:
    """Every tag of the table (main branch), by snapshot id then name."""
    return read_tags(context.metadata(table))


@dataclass(frozen=True)
class TagCreationPlan:
    """A tag to write (or, after a creation that failed after the tag file, to finish)."""

    table: str
    name: str
    snapshot_id: int | None
    snapshot_text: str | None
    time_retained: timedelta | None
    options: TagOptions
    finish_only: bool
    conflict: bool = False  # an interrupted creation of this name on another snapshot

    def preview(self) -> TagResult:
        """What executing would create, nothing written."""
        if self.conflict:
            raise TagExistsError(f"tag {self.name!r} already exists")
        return TagResult(table=self.table, operation="create", created=(self.name,), dry_run=True)


def plan_tag_creation(
    meta: TableMetadata,
    table: str,
    name: str,
    snapshot_id: int | None,
    time_retained: timedelta | None,
    options: TagOptions,
) -> TagCreationPlan:
    """Where the tag goes and what it keeps; reads only. Raises TagExistsError for an existing
    tag, unless its creation was interrupted (success file missing): executing finishes that
    creation, and then raises TagExistsError if the tag is on another snapshot."""
    if meta.file_io.exists(tag_path(meta, name)):
        if not options.success_file or success_file_exists(meta, name):
            raise TagExistsError(f"tag {name!r} already exists")
        conflict = not _is_retry(meta, name, snapshot_id)
        return TagCreationPlan(table, name, None, None, None, options, True, conflict)
    snapshot_id, text = snapshot_text(meta, snapshot_id)
    retained = time_retained if time_retained is not None else options.default_time_retained
    return TagCreationPlan(table, name, snapshot_id, text, retained, options, finish_only=False)


def execute_tag_creation(meta: TableMetadata, plan: TagCreationPlan, clock: Clock) -> TagResult:
    """Write the tag file (and its success file), or finish the interrupted creation."""
    if plan.finish_only:
        finish_creation(meta, plan.name, clock.now_ms())
        if plan.conflict:  # the tag stands, as Java's callbacks leave it; ours is not it
            raise TagExistsError(f"tag {plan.name!r} already exists")
        log.info("finished the interrupted creation of tag %s of %s", plan.name, plan.table)
    else:
        assert plan.snapshot_id is not None and plan.snapshot_text is not None
        write_tag(
            meta,
            plan.name,
            plan.snapshot_id,
            plan.snapshot_text,
            plan.time_retained,
            clock.now(),
            plan.options,
            clock.now_ms(),
        )
        log.info("created tag %s on snapshot %d of %s", plan.name, plan.snapshot_id, plan.table)
    return TagResult(table=plan.table, operation="create", created=(plan.name,))


def create_tag(
    table: FileStoreTable,
    name: str,
    *,
    snapshot_id: int | None = None,
    time_retained: timedelta | None = None,
    dry_run: bool = False,
    context: MaintenanceContext = DEFAULT_CONTEXT,
) -> TagResult:
    """Tag a snapshot (the latest by default); the tag keeps it readable after expiry.

    time_retained None takes tag.default-time-retained (none: kept until deleted); the tag's
    create time is the context's local clock. Raises TagExistsError (Java refuses an existing
    name), SnapshotNotFoundError, InvalidArgumentError (a blank name, a negative retention),
    InvalidOptionError; the table is then unchanged.

    With tag.create-success-file, an existing tag without its success file (a creation that
    failed after the tag file) gets it written, and the call succeeds if that tag is on the
    snapshot asked for (a retry), else raises TagExistsError.
    """
    check_supported_layout(table.table_schema, operation=TAGS)
    check_name(name)
    if time_retained is not None:
        timedelta_ms(time_retained, "time_retained")
    meta = context.metadata(table)
    options = TagOptions.from_table_options(table.table_schema.options)
    return run_planned(
        lambda: plan_tag_creation(
            meta, table_name(table), name, snapshot_id, time_retained, options
        ),
        lambda plan: execute_tag_creation(meta, plan, context.clock),
        dry_run=dry_run,
    )


def _is_retry(meta: TableMetadata, name: str, snapshot_id: int | None) -> bool:
    """The existing tag is on the snapshot asked for (the latest when none is): a retry."""
    held = tagged_snapshot_id(meta, name)
    wanted = latest_snapshot_id(meta) if snapshot_id is None else snapshot_id
    return held is not None and held == wanted


def delete_tag(
    table: FileStoreTable,
    name: str,
    *,
    dry_run: bool = False,
    context: MaintenanceContext = DEFAULT_CONTEXT,
) -> TagResult:
    """Delete a tag and the data, manifest, index and statistics files only it kept alive.

    Raises TagNotFoundError (the table is unchanged), InvalidArgumentError (a blank name);
    not input: MaintenanceAbortedError (metadata of a remaining snapshot or tag is missing).
    """
    check_supported_layout(table.table_schema, operation=TAGS)
    check_name(name)
    meta = context.metadata(table)
    success_file = success_file_enabled(table.table_schema.options)
    return run_planned(
        lambda: plan_tag_removal(
            meta, table_name(table), "delete", [find_tag(meta, name)], success_file
        ),
        lambda plan: execute_tag_removal(meta, plan),
        dry_run=dry_run,
    )


def expire_tags(
    table: FileStoreTable, *, dry_run: bool = False, context: MaintenanceContext = DEFAULT_CONTEXT
) -> TagResult:
    """Delete the tags whose retention (tagTimeRetained from tagCreateTime) has passed, with
    the files only they kept alive; tags without a retention stay. The context's local clock
    is compared with each tag's local create time.

    Not input: MaintenanceAbortedError (metadata of a remaining snapshot or tag is missing).
    """
    check_supported_layout(table.table_schema, operation=TAGS)
    meta = context.metadata(table)
    success_file = success_file_enabled(table.table_schema.options)
    return run_planned(
        lambda: plan_tag_removal(
            meta,
            table_name(table),
            "expire",
            expired_tags(read_tags(meta), context.clock.now()),
            success_file,
        ),
        lambda plan: execute_tag_removal(meta, plan),
        dry_run=dry_run,
    )
