"""The atomic metadata writes: a snapshot file created only if absent (the step every commit
relies on), and whole-file replacement of tags, consumers, changelogs and hints."""

from __future__ import annotations

import logging
from collections.abc import Callable

from dagster_paimon.format.table import FileIO
from dagster_paimon.storage.local import local_path, replace_local
from dagster_paimon.storage.warehouse import warehouse_of

log = logging.getLogger(__name__)

SnapshotWriter = Callable[[FileIO, str, str], bool]


def create_snapshot_if_absent(file_io: FileIO, path: str, content: str) -> bool:
    """True if this call created the file; False if another committer got there first.

    Local disks use a hard link; S3 a conditional write; no lock service either way.
    """
    return warehouse_of(file_io, path).create_if_absent(path, content)


def replace_file(file_io: FileIO, path: str, content: str) -> None:
    """Overwrite a metadata file: a reader, or a kill at any instant, sees old or new bytes.

    An object store replaces whole objects with one PUT; a local disk renames a temp file over
    the name (pypaimon's local overwrite truncates first: a kill there leaves an empty file).
    """
    local = local_path(path)
    if local is None:
        file_io.overwrite_file_utf8(path, content)
    else:
        replace_local(local, content)


def update_latest_hint(file_io: FileIO, latest_path: str, snapshot_id: int) -> None:
    """LATEST is only a hint for readers; failing to write it never fails a commit."""
    try:
        replace_file(file_io, latest_path, str(snapshot_id))
    except Exception as e:
        log.warning("could not update the LATEST hint at %s: %s", latest_path, e)
