"""Tags: create, list, delete (with the files only a tag kept alive), expire, create automatically.

Ports Paimon 2.0's TagManager, TagDeletion, TagTimeExpire, TagAutoCreation, TagTimeExtractor and
TagPeriodHandler (release-2.0.0). A tag file is `tag/tag-<name>`: the tagged snapshot's JSON, plus
`tagCreateTime` and `tagTimeRetained` when the tag has a retention (Java writes neither without
one, so readers older than 0.8 can still read it).

Deleting a tag whose snapshot was expired deletes the data files, manifests, index and statistics
files only that tag kept alive: everything some remaining snapshot, tag, changelog or branch
references is kept (a superset of Java's neighbour-based skipping sets). The tag file goes first,
as in Java: a run that dies midway leaves orphan files, never a tag pointing at deleted files.

With `tag.create-success-file`, creating and deleting tags also writes and deletes their success
files (`tag_success.py`).
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, timezone, tzinfo
from itertools import groupby
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pypaimon.common.time_utils import (
    duration_to_json_seconds,
    local_datetime_to_json_array,
)
from pypaimon.snapshot.snapshot import Snapshot
from pypaimon.table.file_store_table import FileStoreTable
from pypaimon.tag.tag import Tag

from dagster_paimon.errors import (
    InvalidArgumentError,
    InvalidOptionError,
    MaintenanceAbortedError,
    SnapshotNotFoundError,
    TagExistsError,
    TagNotFoundError,
    transient_errors,
)
from dagster_paimon.failpoints import TAG_WRITTEN, failpoint
from dagster_paimon.maintenance.deletion import lists_named, metadata_to_delete
from dagster_paimon.maintenance.expire import _paths, _unused, _used_by_latest
from dagster_paimon.maintenance.references import CHANGELOG, Referrer, referrers
from dagster_paimon.maintenance.tag_success import (
    finish_creation,
    notify_creation,
    notify_deletion,
)
from dagster_paimon.options import (
    TAG_CREATE_SUCCESS_FILE,
    at_least,
    boolean,
    choice,
    duration_ms,
    flag,
    read_option,
)
from dagster_paimon.results import DETAIL, METRIC, Reported, timedelta_ms
from dagster_paimon.snapshot.metadata import SNAPSHOT_PREFIX, TAG_PREFIX, TableMetadata
from dagster_paimon.storage.files import delete_logged
from dagster_paimon.storage.snapshots import replace_file
from dagster_paimon.storage.warehouse import table_files
from dagster_paimon.unsupported import TAGS, check_supported_layout

log = logging.getLogger(__name__)

EPOCH = datetime(1970, 1, 1)
LONG_MIN = -(2**63)
BATCH_TAG_PREFIX = "batch-write-"
MODES = ("none", "process-time", "watermark", "batch")
PERIODS = ("daily", "hourly", "two-hours")
FORMATTERS = ("with_dashes", "without_dashes", "without_dashes_and_spaces")


# -- results ---------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class TagInfo(Reported):
    """One tag: its name, the snapshot it keeps, and its retention if it has one."""

    name: str
    snapshot_id: int
    commit_time_ms: int
    tag_create_time: datetime | None = None
    time_retained: timedelta | None = None

    FIELDS = {
        "name": DETAIL,
        "snapshot_id": DETAIL,
        "commit_time_ms": DETAIL,
        "create_time": DETAIL,
        "time_retained_ms": DETAIL,
    }

    @property
    def time_retained_ms(self) -> int | None:
        """The retention in milliseconds (None: kept until deleted)."""
        if self.time_retained is None:
            return None
        return self.time_retained // timedelta(milliseconds=1)

    @property
    def create_time(self) -> str | None:
        """When the tag was created, ISO text in the writer's local time (as Java records it)."""
        return None if self.tag_create_time is None else self.tag_create_time.isoformat()

    def summary(self) -> str:
        """One human line."""
        retained = "" if self.time_retained is None else f", retained {self.time_retained}"
        return f"{self.name}: snapshot {self.snapshot_id}{retained}"


@dataclass(frozen=True, kw_only=True)
class TagResult(Reported):
    """What a tag operation created and deleted (or, dry, would), with the files it freed."""

    table: str
    operation: str
    created: tuple[str, ...] = ()
    deleted: tuple[str, ...] = ()
    deleted_data_files: int = 0
    deleted_metadata_files: int = 0
    dry_run: bool = False
    seconds: float = 0.0

    FIELDS = {
        "table": DETAIL,
        "operation": DETAIL,
        "created": METRIC,
        "deleted": METRIC,
        "deleted_data_files": METRIC,
        "deleted_metadata_files": METRIC,
        "dry_run": DETAIL,
        "seconds": METRIC,
    }

    def summary(self) -> str:
        """One human line."""
        if not self.created and not self.deleted:
            return f"{self.table}: no tag to {self.operation}"
        would = "would " if self.dry_run else ""
        parts = []
        if self.created:
            parts.append(f"{would}create {', '.join(self.created)}")
        if self.deleted:
            parts.append(
                f"{would}delete {', '.join(self.deleted)} ({self.deleted_data_files} data and "
                f"{self.deleted_metadata_files} metadata files)"
            )
        return f"{self.table}: " + "; ".join(parts)


# -- options ---------------------------------------------------------------------------------


def _zone(text: str | None) -> tzinfo | None:
    """A Java ZoneId ('UTC', 'Asia/Shanghai', '+08:00'); None is the machine's zone."""
    if text is None:
        return None
    match = re.fullmatch(r"(?:UTC|GMT)?([+-])(\d{1,2})(?::?(\d{2}))?", text.strip())
    if match:
        sign = -1 if match.group(1) == "-" else 1
        offset = timedelta(hours=int(match.group(2)), minutes=int(match.group(3) or 0))
        return timezone(sign * offset)
    if text.strip().upper() in ("Z", "UTC", "GMT"):
        return UTC
    try:
        return ZoneInfo(text.strip())
    except (ZoneInfoNotFoundError, ValueError) as e:
        raise InvalidArgumentError(f"unknown time zone {text!r}") from e


def _zone_option(options: Mapping[str, str], key: str, default: str | None) -> tzinfo | None:
    """A time zone option, checked."""
    return read_option(options, key, _zone, _zone(default))


def local_time(epoch_ms: int, zone: tzinfo | None) -> datetime:
    """Java's Instant.ofEpochMilli(ms).atZone(zone).toLocalDateTime(), naive."""
    instant = datetime.fromtimestamp(epoch_ms // 1000, zone) + timedelta(
        milliseconds=epoch_ms % 1000
    )
    return instant.replace(tzinfo=None)


@dataclass(frozen=True)
class PeriodHandler:
    """TagPeriodHandler: a period and the name format of its tags."""

    period: timedelta
    pattern: str
    daily: bool = False

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> PeriodHandler:
        """tag.creation-period-duration, else tag.creation-period with tag.period-formatter."""
        duration = read_option(options, "tag.creation-period-duration", duration_ms, None)
        if duration is not None:
            if duration <= 0:
                raise InvalidOptionError(
                    "table option 'tag.creation-period-duration' must be positive"
                )
            return cls(timedelta(milliseconds=duration), "%Y%m%d%H%M")
        period = read_option(options, "tag.creation-period", choice(PERIODS), "daily")
        formatter = read_option(options, "tag.period-formatter", choice(FORMATTERS), FORMATTERS[0])
        if period == "daily":
            pattern = "%Y-%m-%d" if formatter == "with_dashes" else "%Y%m%d"
            return cls(timedelta(days=1), pattern, daily=True)
        if period == "hourly":
            pattern = {
                "with_dashes": "%Y-%m-%d %H",
                "without_dashes": "%Y%m%d %H",
                "without_dashes_and_spaces": "%Y%m%d%H",
            }[formatter]
            return cls(timedelta(hours=1), pattern)
        return cls(timedelta(hours=2), "%Y-%m-%d %H")

    def to_name(self, time_: datetime) -> str:
        """timeToTag."""
        return f"{time_.year:04d}" + time_.strftime(self.pattern.replace("%Y", "", 1))

    def to_time(self, name: str) -> datetime | None:
        """tagToTime, strict (fixed widths, real dates); None if not this period's name."""
        if self.daily:
            name = name.split(" ")[0]
        regex = re.escape(self.pattern)
        for code in ("%Y", "%m", "%d", "%H", "%M"):
            width = 4 if code == "%Y" else 2
            regex = regex.replace(re.escape(code), rf"(?P<{code[1]}>\d{{{width}}})")
        match = re.fullmatch(regex, name)
        if match is None:
            return None
        parts = match.groupdict()
        try:
            return datetime(
                int(parts["Y"]),
                int(parts["m"]),
                int(parts["d"]),
                int(parts.get("H") or 0),
                int(parts.get("M") or 0),
            )
        except ValueError:
            return None

    def is_auto(self, name: str) -> bool:
        """isAutoTag: the name parses as this period's tag."""
        return self.to_time(name) is not None

    def previous_tag(self, time_: datetime) -> datetime:
        """normalizeToPreviousTag: the local time floored to a period (counted from the epoch
        as if it were UTC, as Java's Timestamp does), minus one period."""
        ms = (time_ - EPOCH) // timedelta(milliseconds=1)
        period_ms = self.period // timedelta(milliseconds=1)
        floored = (abs(ms) // period_ms) * period_ms * (1 if ms >= 0 else -1)  # Java's long /
        return EPOCH + timedelta(milliseconds=floored) - self.period


@dataclass(frozen=True)
class TagOptions:
    """The tag.* options TagAutoManager reads."""

    mode: str = "none"
    delay: timedelta = timedelta(0)
    num_retained_max: int | None = None
    default_time_retained: timedelta | None = None
    time_expire_enabled: bool = True
    automatic_completion: bool = False
    batch_name: str | None = None
    process_zone: tzinfo | None = None
    watermark_zone: tzinfo | None = UTC
    handler: PeriodHandler | None = None
    success_file: bool = False

    @classmethod
    def from_table_options(cls, options: Mapping[str, str]) -> TagOptions:
        """Read and check the options; InvalidOptionError for malformed values."""
        mode = read_option(options, "tag.automatic-creation", choice(MODES), "none")
        retained = read_option(options, "tag.default-time-retained", duration_ms, None)
        handler = PeriodHandler.from_options(options) if mode != "none" else None
        delay = timedelta(milliseconds=read_option(options, "tag.creation-delay", duration_ms, 0))
        if handler is not None and mode != "batch" and not delay < handler.period:
            raise InvalidOptionError(
                f"table option 'tag.creation-delay' ({delay}) must be shorter than the period "
                f"({handler.period})"
            )
        return cls(
            mode=mode,
            delay=delay,
            num_retained_max=read_option(options, "tag.num-retained-max", at_least(0), None),
            default_time_retained=None if retained is None else timedelta(milliseconds=retained),
            time_expire_enabled=read_option(options, "tag.time-expire-enabled", boolean, True),
            automatic_completion=read_option(options, "tag.automatic-completion", boolean, False),
            batch_name=options.get("tag.batch.customized-name"),
            process_zone=_zone_option(options, "sink.process-time-zone", None),
            watermark_zone=_zone_option(options, "sink.watermark-time-zone", "UTC"),
            handler=handler,
            success_file=flag(options, TAG_CREATE_SUCCESS_FILE),
        )


# -- reading tags ----------------------------------------------------------------------------


def _table_name(table: FileStoreTable) -> str:
    """The 'db.table' name for reports."""
    return str(table.identifier.get_full_name())


def _tag_path(meta: TableMetadata, name: str) -> str:
    """tag/tag-<name> of the main branch."""
    return f"{meta.main.dir('tag')}/{TAG_PREFIX}{name}"


def _check_name(name: str) -> None:
    """Java refuses blank names; a slash would put the tag file elsewhere."""
    if not isinstance(name, str) or not name.strip():
        raise InvalidArgumentError("tag name must not be blank")
    if "/" in name:
        raise InvalidArgumentError(f"tag name {name!r} must not contain '/'")


def _read_tags(meta: TableMetadata) -> list[TagInfo]:
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


def list_tags(table: FileStoreTable) -> list[TagInfo]:
    """Every tag of the table (main branch), by snapshot id then name."""
    return _read_tags(TableMetadata(table, table_files(table)))


# -- creating --------------------------------------------------------------------------------


def _snapshot_text(meta: TableMetadata, snapshot_id: int | None) -> tuple[int, str]:
    """(id, raw JSON) of a snapshot, the latest by default; SnapshotNotFoundError if absent."""
    if snapshot_id is None:
        ids = meta.ids(meta.main.dir("snapshot"), SNAPSHOT_PREFIX)
        if not ids:
            raise SnapshotNotFoundError(f"{_table_name(meta.table)} has no snapshot to tag")
        snapshot_id = ids[-1]
    if isinstance(snapshot_id, bool) or not isinstance(snapshot_id, int):
        raise InvalidArgumentError(f"snapshot_id must be an int, got {snapshot_id!r}")
    try:
        text = meta.file_io.read_file_utf8(meta.snapshot_path(snapshot_id))
    except FileNotFoundError:
        text = None
    if not text:
        raise SnapshotNotFoundError(
            f"snapshot {snapshot_id} of {_table_name(meta.table)} does not exist"
        )
    return snapshot_id, text


def _tag_text(snapshot_text: str, retained: timedelta | None, now: datetime) -> str:
    """The tag file: the snapshot's JSON as written (every field kept), plus the retention."""
    if retained is None:
        return snapshot_text
    content = json.loads(snapshot_text)
    content["tagCreateTime"] = local_datetime_to_json_array(now)
    content["tagTimeRetained"] = duration_to_json_seconds(retained)
    return json.dumps(content, indent=2)


def _write_tag(
    meta: TableMetadata,
    name: str,
    snapshot_id: int,
    text: str,
    retained: timedelta | None,
    now: datetime,
    options: TagOptions,
) -> None:
    """createOrReplaceTag: refuse a second auto tag on one snapshot, write the file, then
    the success file (its callback)."""
    handler = options.handler
    if handler is not None and options.mode != "batch" and handler.is_auto(name):
        auto = [
            t.name
            for t in _read_tags(meta)
            if t.snapshot_id == snapshot_id and handler.is_auto(t.name)
        ]
        if auto:
            raise TagExistsError(f"snapshot {snapshot_id} is already auto-tagged with {auto}")
    replace_file(meta.file_io, _tag_path(meta, name), _tag_text(text, retained, now))
    failpoint(TAG_WRITTEN)
    if options.success_file:
        notify_creation(meta, name)


def _now(now: datetime | None) -> datetime:
    """Java's LocalDateTime.now(): the machine's local time, naive."""
    return datetime.now() if now is None else now


def create_tag(
    table: FileStoreTable,
    name: str,
    *,
    snapshot_id: int | None = None,
    time_retained: timedelta | None = None,
) -> TagResult:
    """Tag a snapshot (the latest by default); the tag keeps it readable after expiry.

    time_retained None takes tag.default-time-retained (none: kept until deleted). Raises
    TagExistsError (Java refuses an existing name), SnapshotNotFoundError, InvalidArgumentError
    (a blank name, a negative retention), InvalidOptionError; the table is then unchanged.

    With tag.create-success-file, an existing tag without its success file (a creation that
    failed after the tag file) gets it written, and the call succeeds if that tag is on the
    snapshot asked for (a retry), else raises TagExistsError.
    """
    with transient_errors():
        return _create_tag(table, name, snapshot_id=snapshot_id, time_retained=time_retained)


def _create_tag(
    table: FileStoreTable,
    name: str,
    *,
    snapshot_id: int | None = None,
    time_retained: timedelta | None = None,
    now: datetime | None = None,
) -> TagResult:
    """create_tag with the tests' clock (the tag's create time, the writer's local time)."""
    start = time.perf_counter()
    check_supported_layout(table.table_schema, operation=TAGS)
    _check_name(name)
    if time_retained is not None:
        timedelta_ms(time_retained, "time_retained")
    meta = TableMetadata(table, table_files(table))
    options = TagOptions.from_table_options(table.table_schema.options)
    if meta.file_io.exists(_tag_path(meta, name)):
        if not (_finished(meta, options, name) and _is_retry(meta, name, snapshot_id)):
            raise TagExistsError(f"tag {name!r} already exists")
        log.info("finished the interrupted creation of tag %s of %s", name, _table_name(table))
    else:
        snapshot_id, text = _snapshot_text(meta, snapshot_id)
        retained = time_retained if time_retained is not None else options.default_time_retained
        _write_tag(meta, name, snapshot_id, text, retained, _now(now), options)
        log.info("created tag %s on snapshot %d of %s", name, snapshot_id, _table_name(table))
    return TagResult(
        table=_table_name(table),
        operation="create",
        created=(name,),
        seconds=time.perf_counter() - start,
    )


def _finished(meta: TableMetadata, options: TagOptions, name: str) -> bool:
    """Java refuses an existing tag; first write the success file a failed creation left out."""
    return options.success_file and finish_creation(meta, name)


def _is_retry(meta: TableMetadata, name: str, snapshot_id: int | None) -> bool:
    """The existing tag is on the snapshot asked for (the latest when none is): a retry."""
    tag = meta.read_json(_tag_path(meta, name), Tag)
    if snapshot_id is None:
        ids = meta.ids(meta.main.dir("snapshot"), SNAPSHOT_PREFIX)
        snapshot_id = ids[-1] if ids else None
    return tag is not None and tag.id == snapshot_id


# -- deleting --------------------------------------------------------------------------------


@dataclass(frozen=True)
class TagDeletionPlan:
    """The tag file to delete and the files only it kept alive."""

    name: str
    data_files: tuple[str, ...] = ()
    metadata_files: tuple[str, ...] = ()


def _plan_delete(meta: TableMetadata, tag: TagInfo, gone: frozenset[str]) -> TagDeletionPlan:
    """TagManager.deleteTag's plan; `gone` names tags deleted earlier in the same run."""
    others = [t for t in _read_tags(meta) if t.name != tag.name and t.name not in gone]
    if meta.file_io.exists(meta.snapshot_path(tag.snapshot_id)) or any(
        t.snapshot_id == tag.snapshot_id for t in others
    ):
        return TagDeletionPlan(tag.name)  # the snapshot or another tag keeps every file
    snapshot = meta.read_json(_tag_path(meta, tag.name), Snapshot)
    if snapshot is None:
        return TagDeletionPlan(tag.name)
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
        return TagDeletionPlan(tag.name)
    data = _paths(meta, live, used)
    metadata = metadata_to_delete(
        meta, [snapshot], used, lists_of=lists_named(data_lists=True, changelog_lists=False)
    )
    return TagDeletionPlan(tag.name, tuple(data), tuple(metadata))


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


def _execute_delete(
    meta: TableMetadata, plan: TagDeletionPlan, success_file: bool
) -> tuple[int, int]:
    """The success file, the tag file (as Java), then files a concurrent commit did not start
    using."""
    if success_file:
        notify_deletion(meta, plan.name)
    meta.files.delete_files([_tag_path(meta, plan.name)])
    if not plan.data_files and not plan.metadata_files:
        return 0, 0
    in_use = _used_by_latest(meta)
    data = delete_logged(meta.files, _unused(plan.data_files, in_use, "data files"), "data files")
    metadata = delete_logged(
        meta.files, _unused(plan.metadata_files, in_use, "metadata files"), "metadata files"
    )
    return data, metadata


@dataclass
class _Deleter:
    """Deletes tags one after another (or, dry, plans each as if the earlier ones were gone)."""

    meta: TableMetadata
    dry_run: bool
    success_file: bool
    deleted: list[str] = field(default_factory=list)
    data: int = 0
    metadata: int = 0

    def delete(self, tag: TagInfo, *, notify: bool = True) -> None:
        """notify False: Java deletes the tag file without its callbacks (success file kept)."""
        plan = _plan_delete(self.meta, tag, frozenset(self.deleted))
        if self.dry_run:
            data, metadata = len(plan.data_files), len(plan.metadata_files)
        else:
            data, metadata = _execute_delete(self.meta, plan, self.success_file and notify)
        log.info("%sdeleted tag %s", "(dry run) " if self.dry_run else "", tag.name)
        self.deleted.append(tag.name)
        self.data += data
        self.metadata += metadata


def _success_file(table: FileStoreTable) -> bool:
    """tag.create-success-file, read alone: deleting needs no other tag option to be valid."""
    return flag(table.table_schema.options, TAG_CREATE_SUCCESS_FILE)


def _find(meta: TableMetadata, name: str) -> TagInfo:
    """The tag of that name, else TagNotFoundError."""
    for tag in _read_tags(meta):
        if tag.name == name:
            return tag
    raise TagNotFoundError(f"tag {name!r} of {_table_name(meta.table)} does not exist")


def delete_tag(table: FileStoreTable, name: str, *, dry_run: bool = False) -> TagResult:
    """Delete a tag and the data, manifest, index and statistics files only it kept alive.

    Raises TagNotFoundError (the table is unchanged), InvalidArgumentError (a blank name);
    not input: MaintenanceAbortedError (metadata of a remaining snapshot or tag is missing).
    """
    start = time.perf_counter()
    check_supported_layout(table.table_schema, operation=TAGS)
    _check_name(name)
    with transient_errors(table_unchanged=True if dry_run else None):
        meta = TableMetadata(table, table_files(table))
        deleter = _Deleter(meta, dry_run, _success_file(table))
        deleter.delete(_find(meta, name))
    return _result(meta, "delete", deleter, (), start)


def _result(
    meta: TableMetadata, operation: str, deleter: _Deleter, created: tuple[str, ...], start: float
) -> TagResult:
    """The result of a run."""
    return TagResult(
        table=_table_name(meta.table),
        operation=operation,
        created=created,
        deleted=tuple(deleter.deleted),
        deleted_data_files=deleter.data,
        deleted_metadata_files=deleter.metadata,
        dry_run=deleter.dry_run,
        seconds=time.perf_counter() - start,
    )


# -- expiring by time retained ---------------------------------------------------------------


def _expire_by_time(deleter: _Deleter, now: datetime) -> None:
    """TagTimeExpire: delete every tag whose tagCreateTime + tagTimeRetained is before now."""
    for tag in _read_tags(deleter.meta):
        if tag.name in deleter.deleted or tag.tag_create_time is None or tag.time_retained is None:
            continue
        if now > tag.tag_create_time + tag.time_retained:
            deleter.delete(tag)


def expire_tags(table: FileStoreTable, *, dry_run: bool = False) -> TagResult:
    """Delete the tags whose retention (tagTimeRetained from tagCreateTime) has passed, with
    the files only they kept alive; tags without a retention stay.

    Not input: MaintenanceAbortedError (metadata of a remaining snapshot or tag is missing).
    """
    with transient_errors(table_unchanged=True if dry_run else None):
        return _expire_tags(table, dry_run=dry_run)


def _expire_tags(
    table: FileStoreTable, *, dry_run: bool = False, now: datetime | None = None
) -> TagResult:
    """expire_tags with the tests' clock (compared with each tag's local create time)."""
    start = time.perf_counter()
    check_supported_layout(table.table_schema, operation=TAGS)
    meta = TableMetadata(table, table_files(table))
    deleter = _Deleter(meta, dry_run, _success_file(table))
    _expire_by_time(deleter, _now(now))
    return _result(meta, "expire", deleter, (), start)


# -- automatic creation ----------------------------------------------------------------------


@dataclass
class _AutoState:
    """What TagAutoCreation restores from the newest auto tag: next snapshot, next tag time."""

    next_snapshot: int
    next_tag: datetime | None
    newest: str | None = None


def _restore(meta: TableMetadata, handler: PeriodHandler, earliest: int) -> _AutoState:
    """The newest auto tag (by its time) decides where creation resumes."""
    auto = [(t, handler.to_time(t.name)) for t in _read_tags(meta) if handler.is_auto(t.name)]
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


def _retain_max(deleter: _Deleter, handler: PeriodHandler, limit: int) -> None:
    """tag.num-retained-max: delete the oldest auto tags (by snapshot) beyond the limit."""
    auto: dict[int, list[TagInfo]] = {}
    for t in _read_tags(deleter.meta):
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


def create_automatic_tags(table: FileStoreTable, *, dry_run: bool = False) -> TagResult:
    """What Paimon's writers do after each commit (TagAutoManager): create the tags of every
    period that ended since the last auto tag, by tag.automatic-creation (process-time,
    watermark; batch: `batch-write-<date>` on the latest snapshot), tag.creation-period,
    tag.creation-delay and tag.period-formatter; delete the oldest auto tags beyond
    tag.num-retained-max; then expire tags by time retained (tag.time-expire-enabled).

    Raises InvalidOptionError (malformed tag options); not input: MaintenanceAbortedError.
    """
    with transient_errors(table_unchanged=True if dry_run else None):
        return _create_automatic_tags(table, dry_run=dry_run)


def _create_automatic_tags(
    table: FileStoreTable, *, dry_run: bool = False, now: datetime | None = None
) -> TagResult:
    """create_automatic_tags with the tests' clock (create times and time-retained expiry)."""
    start = time.perf_counter()
    check_supported_layout(table.table_schema, operation=TAGS)
    meta = TableMetadata(table, table_files(table))
    options = TagOptions.from_table_options(table.table_schema.options)
    now = _now(now)
    deleter = _Deleter(meta, dry_run, options.success_file)
    created: list[str] = []
    if options.mode == "batch":
        _create_batch(meta, options, deleter, created, now)
    elif options.mode != "none":
        _create_periodic(meta, options, deleter, created, now)
    if options.time_expire_enabled:
        _expire_by_time(deleter, now)
    return _result(meta, "auto", deleter, tuple(created), start)


def _create_periodic(
    meta: TableMetadata,
    options: TagOptions,
    deleter: _Deleter,
    created: list[str],
    now: datetime,
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
        finish_creation(meta, state.newest)
    existing = {t.name for t in _read_tags(meta)}
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
                _, text = _snapshot_text(meta, snapshot_id)
                _write_tag(
                    meta, name, snapshot_id, text, options.default_time_retained, now, options
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
    deleter: _Deleter,
    created: list[str],
    ids: list[int],
) -> None:
    """A dry run's num-retained-max: the tags created would be the newest, so the oldest of
    the existing ones (and, past them, of the created ones) would go."""
    existing = sorted(
        (t for t in _read_tags(meta) if handler.is_auto(t.name)), key=lambda t: t.snapshot_id
    )
    excess = len(existing) + len(created) - limit
    for tag in existing[: max(excess, 0)]:
        deleter.delete(tag)
    for name in created[: max(excess - len(existing), 0)]:
        deleter.deleted.append(name)


def _create_batch(
    meta: TableMetadata,
    options: TagOptions,
    deleter: _Deleter,
    created: list[str],
    now: datetime,
) -> None:
    """TagBatchCreation: tag the latest snapshot `batch-write-<yyyy-MM-dd>` (or the customized
    name), replacing a tag of that name, then keep at most tag.num-retained-max tags."""
    ids = meta.ids(meta.main.dir("snapshot"), SNAPSHOT_PREFIX)
    if not ids:
        return
    snapshot_id, text = _snapshot_text(meta, ids[-1])
    snapshot = meta.snapshot(snapshot_id)
    assert snapshot is not None
    day = local_time(snapshot.time_millis, options.process_zone)
    name = options.batch_name or f"{BATCH_TAG_PREFIX}{day:%Y-%m-%d}"
    tags = {t.name: t for t in _read_tags(meta)}
    if name in tags:
        deleter.delete(tags[name])
    if not deleter.dry_run:
        _write_tag(meta, name, snapshot_id, text, options.default_time_retained, now, options)
    created.append(name)
    limit = options.num_retained_max
    if limit is None:
        return
    # the tag just written counts, even when it replaced one of its name (Java's tagCount)
    remaining = [t for t in _read_tags(meta) if t.name not in deleter.deleted and t.name != name]
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
