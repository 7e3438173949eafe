"""A local-disk warehouse: scandir listings, unlink, and create-if-absent by hard link."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlparse

import pyarrow as pa

from dagster_paimon.failpoints import FILE_DELETED, TEMP_FILE_WRITTEN, failpoint
from dagster_paimon.storage.create import create_resolved
from dagster_paimon.storage.files import FileStatus, temp_name
from dagster_paimon.storage.retry import RetryPolicy

# a local disk answers at once; only a failed link (NFS) needs its outcome read back
LOCAL_RETRIES = RetryPolicy(attempts=3, base_s=0.05, cap_s=0.5)


def local_path(path: str) -> str | None:
    """The filesystem path of a local location, or None for an object-store URI."""
    parsed = urlparse(path)
    if parsed.scheme == "" or (len(parsed.scheme) == 1 and os.name == "nt"):
        return path
    if parsed.scheme == "file":
        return parsed.path
    return None


def input_stream(file_io: Any, path: str) -> Any:
    """A local file as a native Arrow file (decoders read it without taking the GIL, as they
    must a Python file object's), any other path as the file IO opens it."""
    local = local_path(path)
    return pa.OSFile(local) if local is not None else file_io.new_input_stream(path)


def _stored(path: str) -> bytes | None:
    """The file's bytes, None if there is none."""
    try:
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        return None


def _link(temp: str, path: str) -> bool:
    """Hard-link the temp file into place; False when the name exists."""
    try:
        os.link(temp, path)
    except FileExistsError:
        return False
    return True


def create_local_if_absent(path: str, content: str) -> bool:
    """True if this call created `path` with `content`, False if another writer did first.

    A temp file is hard-linked into place: the kernel refuses an existing name. An "exists" or
    any other failure of the link (on NFS a retransmitted link that already landed answers
    EEXIST) is resolved by reading the name back, as an object store's create is. A kill before
    the temp file is unlinked leaves it; orphan removal takes it once old.
    """
    directory = os.path.dirname(path)
    os.makedirs(directory, exist_ok=True)
    body = content.encode("utf-8")
    temp = os.path.join(directory, temp_name(os.path.basename(path)))
    try:
        with open(temp, "wb") as f:
            f.write(body)
            f.flush()
            os.fsync(f.fileno())
        failpoint(TEMP_FILE_WRITTEN)
        created = create_resolved(
            path, body, lambda: _link(temp, path), lambda: _stored(path), LOCAL_RETRIES
        )
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
    if created:
        _fsync_directory(directory)
    return created


def replace_local(path: str, content: str) -> None:
    """Overwrite `path` so that a reader or a crash sees the old bytes or the new, never part.

    The bytes go to a synced temp file that is renamed over the name (rename is atomic). A kill
    before the rename leaves the temp file; orphan removal takes it once old.
    """
    directory = os.path.dirname(path)
    os.makedirs(directory, exist_ok=True)
    temp = os.path.join(directory, temp_name(os.path.basename(path)))
    try:
        with open(temp, "wb") as f:
            f.write(content.encode("utf-8"))
            f.flush()
            os.fsync(f.fileno())
        failpoint(TEMP_FILE_WRITTEN)
        os.replace(temp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
    _fsync_directory(directory)


def _fsync_directory(directory: str) -> None:
    """Make a new name durable: a crash after the commit must not forget the snapshot."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    except OSError:
        pass  # some filesystems (and all of Windows) cannot fsync a directory
    finally:
        os.close(fd)


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
