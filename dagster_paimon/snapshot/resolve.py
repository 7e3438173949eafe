"""Which snapshot: the latest (cheaply, by its hint), a given one, or the one a commit made."""

from __future__ import annotations

from typing import TypeVar

from dagster_paimon.errors import CorruptFileError, SnapshotNotFoundError
from dagster_paimon.format.metadata import Snapshot
from dagster_paimon.format.table import FileIO, FileStoreTable
from dagster_paimon.format.values import JSON
from dagster_paimon.storage.files import file_exists
from dagster_paimon.storage.pool import parallel_map

APPEND, OVERWRITE, COMPACT = "APPEND", "OVERWRITE", "COMPACT"

T = TypeVar("T")


def read_json(file_io: FileIO, path: str, cls: type[T]) -> T | None:
    """A snapshot, changelog or tag file, or None when it does not exist (expired meanwhile);
    read without a separate existence probe, which object stores charge for."""
    try:
        text = file_io.read_file_utf8(path)
    except FileNotFoundError:
        return None
    try:
        return JSON.from_json(text, cls)
    except (ValueError, TypeError, KeyError, AttributeError) as e:
        raise CorruptFileError(f"{path} is not a valid {cls.__name__} file: {e}") from e


def latest_snapshot_id(table: FileStoreTable) -> int | None:
    """The latest snapshot's id (None for an empty table) in two requests when the LATEST hint
    is current, as it almost always is (a GET of the hint, a HEAD of the next id: Java's
    SnapshotManager.latestSnapshotId); pypaimon's full reconciliation when it is not.

    A hint is current when no snapshot after it exists, the check pypaimon and Java make too;
    object stores charge per request, and a sensor asks this of every table on every tick.
    """
    manager = table.snapshot_manager()
    if not table.catalog_environment.supports_version_management:
        try:
            hint = int(table.file_io.read_file_utf8(manager.latest_file).strip())
            if not file_exists(table.file_io, manager.get_snapshot_path(hint + 1)):
                return hint
        except (OSError, ValueError):
            pass
    latest = manager.get_latest_snapshot()
    return latest.id if latest else None


def read_snapshot(table: FileStoreTable, snapshot_id: int) -> Snapshot | None:
    """One snapshot, or None when it does not exist."""
    path = table.snapshot_manager().get_snapshot_path(snapshot_id)
    return read_json(table.file_io, path, Snapshot)


def recent_snapshots(table: FileStoreTable, newest: int | None, count: int) -> list[Snapshot]:
    """Up to `count` snapshots from `newest` down, newest first, ending where one has expired:
    `count` snapshot-file reads in parallel (GETs on an object store), no manifest."""
    if newest is None:
        return []
    ids = list(range(newest, max(newest - count, 0), -1))
    recent: list[Snapshot] = []
    for snapshot in parallel_map(lambda i: read_snapshot(table, i), ids):
        if snapshot is None:  # expired: every older one is too
            break
        recent.append(snapshot)
    return recent


def resolve_snapshot(table: FileStoreTable, snapshot_id: int | None) -> Snapshot | None:
    """The latest snapshot (None for an empty table) or the given one, which must exist."""
    if snapshot_id is None:
        latest = latest_snapshot_id(table)
        if latest is None:
            return None
        snapshot = read_snapshot(table, latest)
        return snapshot if snapshot is not None else table.snapshot_manager().get_latest_snapshot()
    snapshot = read_snapshot(table, snapshot_id)
    if snapshot is None:
        raise SnapshotNotFoundError(
            f"snapshot {snapshot_id} of {table.identifier.get_full_name()} does not exist "
            "(never written, or expired)"
        )
    return snapshot


def find_landed(
    table: FileStoreTable,
    commit_user: str,
    identifier: int | None = None,
    *,
    after: int | None = None,
    kind: str | None = None,
) -> Snapshot | None:
    """The snapshot a commit (user, and identifier and kind when given) made after `after`.

    This is how a committer whose snapshot write had an unknown outcome, or a driver whose
    commit ran elsewhere, learns whether the commit landed.
    """
    manager = table.snapshot_manager()
    latest = manager.get_latest_snapshot()
    for snapshot_id in range((after or 0) + 1, (latest.id if latest else 0) + 1):
        s = manager.get_snapshot_by_id(snapshot_id)
        if (
            s is not None
            and s.commit_user == commit_user
            and identifier in (None, s.commit_identifier)
            and kind in (None, s.commit_kind)
        ):
            return s
    return None
