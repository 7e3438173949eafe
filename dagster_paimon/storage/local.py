"""A local-disk warehouse: scandir listings, unlink, and create-if-absent by hard link."""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Sequence
from urllib.parse import urlparse

from dagster_paimon.failpoints import FILE_DELETED, failpoint
from dagster_paimon.storage.files import FileStatus


def local_path(path: str) -> str | None:
    """The filesystem path of a local location, or None for an object-store URI."""
    parsed = urlparse(path)
    if parsed.scheme == "" or (len(parsed.scheme) == 1 and os.name == "nt"):
        return path
    if parsed.scheme == "file":
        return parsed.path
    return None


def create_local_if_absent(path: str, content: str) -> bool:
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


class LocalFiles:
    """A local disk: scandir listings and unlink, no per-file round trips."""

    def list_dir(self, directory: str) -> list[FileStatus]:
        """Children with size and mtime from one scandir pass."""
        path = local_path(directory) or directory
        try:
            entries = list(os.scandir(path))
        except (FileNotFoundError, NotADirectoryError):
            return []
        result = []
        for entry in entries:
            try:
                st = entry.stat(follow_symlinks=False)
            except FileNotFoundError:
                continue
            is_dir = entry.is_dir(follow_symlinks=False)
            result.append(
                FileStatus(entry.path, 0 if is_dir else st.st_size, st.st_mtime_ns // 10**6, is_dir)
            )
        return result

    def delete_files(self, paths: Sequence[str]) -> int:
        """Unlink each file; a file already gone is not counted."""
        deleted = 0
        for p in paths:
            try:
                os.unlink(local_path(p) or p)
                deleted += 1
                failpoint(FILE_DELETED)
            except FileNotFoundError:
                continue
        return deleted
