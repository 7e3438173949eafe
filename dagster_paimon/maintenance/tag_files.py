"""Tag files (Java's TagManager): `tag/tag-<name>` of the main branch, read, listed and written.

A tag file is the tagged snapshot's JSON, plus `tagCreateTime` and `tagTimeRetained` when the
tag has a retention (Java writes neither without one, so readers older than 0.8 can still read
it). With `tag.create-success-file`, writing a tag also writes its success file
(`tag_success.py`).
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta

from dagster_paimon.errors import (
    InvalidArgumentError,
    SnapshotNotFoundError,
    TagExistsError,
    TagNotFoundError,
)
from dagster_paimon.failpoints import TAG_WRITTEN, failpoint
from dagster_paimon.format.metadata import Tag
from dagster_paimon.format.values import duration_to_json_seconds, local_datetime_to_json_array
from dagster_paimon.maintenance.context import table_name
from dagster_paimon.maintenance.tag_options import TagOptions
from dagster_paimon.maintenance.tag_results import TagInfo
from dagster_paimon.maintenance.tag_success import notify_creation
from dagster_paimon.snapshot.metadata import SNAPSHOT_PREFIX, TAG_PREFIX, TableMetadata
from dagster_paimon.storage.snapshots import replace_file


def tag_path(meta: TableMetadata, name: str) -> str:
    """tag/tag-<name> of the main branch."""
    return f"{meta.main.dir('tag')}/{TAG_PREFIX}{name}"


def check_name(name: str) -> None:
    """Java refuses blank names; a slash would put the tag file elsewhere."""
    if not isinstance(name, str) or not name.strip():
        raise InvalidArgumentError("tag name must not be blank")
    if "/" in name:
        raise InvalidArgumentError(f"tag name {name!r} must not contain '/'")


def read_tags(meta: TableMetadata) -> list[TagInfo]:
    """Every tag of the main branch, by snapshot id then name."""
    directory = meta.main.dir("tag")
    found = []
    for status in meta.files.list_dir(directory):
        if status.is_dir or not status.name.startswith(TAG_PREFIX):
            continue
        tag = meta.read_json(f"{directory}/{status.name}", Tag)
        if tag is None:
            continue  # deleted meanwhile, as Java skips it
        found.append(
            TagInfo(
                name=status.name[len(TAG_PREFIX) :],
                snapshot_id=tag.id,
                commit_time_ms=tag.time_millis,
                tag_create_time=tag.tag_create_time,
                time_retained=tag.tag_time_retained,
            )
        )
    return sorted(found, key=lambda t: (t.snapshot_id, t.name))


def find_tag(meta: TableMetadata, name: str) -> TagInfo:
    """The tag of that name, else TagNotFoundError."""
    for tag in read_tags(meta):
        if tag.name == name:
            return tag
    raise TagNotFoundError(f"tag {name!r} of {table_name(meta.table)} does not exist")


def tagged_snapshot_id(meta: TableMetadata, name: str) -> int | None:
    """The snapshot the tag file of that name holds (None: no such file)."""
    tag = meta.read_json(tag_path(meta, name), Tag)
    return None if tag is None else tag.id


def latest_snapshot_id(meta: TableMetadata) -> int | None:
    """The newest snapshot listed (None: none)."""
    ids = meta.ids(meta.main.dir("snapshot"), SNAPSHOT_PREFIX)
    return ids[-1] if ids else None


def snapshot_text(meta: TableMetadata, snapshot_id: int | None) -> tuple[int, str]:
    """(id, raw JSON) of a snapshot, the latest by default; SnapshotNotFoundError if absent."""
    if snapshot_id is None:
        snapshot_id = latest_snapshot_id(meta)
        if snapshot_id is None:
            raise SnapshotNotFoundError(f"{table_name(meta.table)} has no snapshot to tag")
    if isinstance(snapshot_id, bool) or not isinstance(snapshot_id, int):
        raise InvalidArgumentError(f"snapshot_id must be an int, got {snapshot_id!r}")
    try:
        text = meta.file_io.read_file_utf8(meta.snapshot_path(snapshot_id))
    except FileNotFoundError:
        text = None
    if not text:
        raise SnapshotNotFoundError(
            f"snapshot {snapshot_id} of {table_name(meta.table)} does not exist"
        )
    return snapshot_id, text


def tag_text(snapshot_json: str, retained: timedelta | None, now: datetime) -> str:
    """The tag file: the snapshot's JSON as written (every field kept), plus the retention."""
    if retained is None:
        return snapshot_json
    content = json.loads(snapshot_json)
    content["tagCreateTime"] = local_datetime_to_json_array(now)
    content["tagTimeRetained"] = duration_to_json_seconds(retained)
    return json.dumps(content, indent=2)


def write_tag(
    meta: TableMetadata,
    name: str,
    snapshot_id: int,
    text: str,
    retained: timedelta | None,
    now: datetime,
    options: TagOptions,
    now_ms: int,
) -> None:
    """createOrReplaceTag: refuse a second auto tag on one snapshot, write the file, then
    the success file (its callback, stamped `now_ms`)."""
    handler = options.handler
    if handler is not None and options.mode != "batch" and handler.is_auto(name):
        auto = [
            t.name
            for t in read_tags(meta)
            if t.snapshot_id == snapshot_id and handler.is_auto(t.name)
        ]
        if auto:
            raise TagExistsError(f"snapshot {snapshot_id} is already auto-tagged with {auto}")
    replace_file(meta.file_io, tag_path(meta, name), tag_text(text, retained, now))
    failpoint(TAG_WRITTEN)
    if options.success_file:
        notify_creation(meta, name, now_ms)
