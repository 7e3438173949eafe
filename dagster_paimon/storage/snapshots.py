"""Create a snapshot file only if absent: the one atomic step every commit relies on."""

from __future__ import annotations

import logging
from collections.abc import Callable

from pypaimon.common.file_io import FileIO

from dagster_paimon.storage.warehouse import warehouse_of

log = logging.getLogger(__name__)

SnapshotWriter = Callable[[FileIO, str, str], bool]


def create_snapshot_if_absent(file_io: FileIO, path: str, content: str) -> bool:
    """True if this call created the file; False if another committer got there first.

    Local disks use a hard link; S3 a conditional write; no lock service either way.
    """
    return warehouse_of(file_io, path).create_if_absent(path, content)


def update_latest_hint(file_io: FileIO, latest_path: str, snapshot_id: int) -> None:
    """LATEST is only a hint for readers; failing to write it never fails a commit."""
    try:
        file_io.write_file(latest_path, str(snapshot_id), overwrite=True)
    except Exception as e:
        log.warning("could not update the LATEST hint at %s: %s", latest_path, e)
