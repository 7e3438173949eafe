"""Create a snapshot file only if absent: the one atomic step every commit relies on."""

from __future__ import annotations

import contextlib
import logging
import os
import uuid
from urllib.parse import urlparse

from pypaimon.common.file_io import FileIO

log = logging.getLogger(__name__)


def local_path(path: str) -> str | None:
    """The filesystem path of a local location, or None for an object-store URI."""
    parsed = urlparse(path)
    if parsed.scheme == "":
        return path
    if parsed.scheme == "file":
        return parsed.path
    return None


def _create_local_if_absent(path: str, content: str) -> bool:
    """Write a temp file, then hard-link it into place: link fails if the name exists."""
    directory = os.path.dirname(path)
    os.makedirs(directory, exist_ok=True)
    temp = os.path.join(directory, f".{os.path.basename(path)}.{uuid.uuid4()}.tmp")
    try:
        with open(temp, "w", encoding="utf-8") as f:
            f.write(content)
            f.flush()
            os.fsync(f.fileno())
        try:
            os.link(temp, path)
        except FileExistsError:
            return False
        return True
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)


def create_snapshot_if_absent(file_io: FileIO, path: str, content: str) -> bool:
    """True if this call created the file; False if another committer got there first."""
    local = local_path(path)
    if local is not None:
        return _create_local_if_absent(local, content)
    if file_io.exists(path):
        return False
    return file_io.try_to_write_atomic(path, content)


def update_latest_hint(file_io: FileIO, latest_path: str, snapshot_id: int) -> None:
    """LATEST is only a hint for readers; failing to write it never fails a commit."""
    try:
        file_io.write_file(latest_path, str(snapshot_id), overwrite=True)
    except Exception as e:
        log.warning("could not update the LATEST hint at %s: %s", latest_path, e)
