"""Listing and deleting table files: the one seam between maintenance and each store."""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

import pyarrow.fs as pafs
from pypaimon.common.file_io import FileIO
from pypaimon.table.file_store_table import FileStoreTable

from dagster_paimon.storage.snapshots import local_path

log = logging.getLogger(__name__)

DELETE_THREADS = 16


@dataclass(frozen=True)
class FileStatus:
    """One listed entry: enough to judge age and report what a deletion frees."""

    path: str
    size: int
    mtime_ms: int
    is_dir: bool

    @property
    def name(self) -> str:
        """The last path component, which is how Paimon metadata names files."""
        return self.path.rstrip("/").rsplit("/", 1)[-1]


class TableFiles(Protocol):
    """What maintenance needs from a store; S3 batching plugs in behind delete_files."""

    def list_dir(self, directory: str) -> list[FileStatus]:
        """Direct children of a directory; a missing directory lists as empty."""
        ...

    def delete_files(self, paths: Sequence[str]) -> int:
        """Delete files (never directories); already-missing files count as not deleted."""
        ...


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
        """Unlink each file; a file already gone is not an error."""
        deleted = 0
        for p in paths:
            try:
                os.unlink(local_path(p) or p)
                deleted += 1
            except FileNotFoundError:
                continue
        return deleted


def _mtime_ms(status: object) -> int:
    """Modification time from a pyarrow FileInfo (datetime) or a pypaimon status (seconds)."""
    mtime_ns = getattr(status, "mtime_ns", None)
    if mtime_ns is not None:
        return int(mtime_ns) // 10**6
    mtime = getattr(status, "mtime", None)
    if isinstance(mtime, datetime):
        return int(mtime.timestamp() * 1000)
    if mtime is None:
        raise ValueError(f"store reports no modification time for {status}")
    return int(float(mtime) * 1000)


class FileIOFiles:
    """Any pypaimon FileIO (S3, OSS, HDFS): listing through it, deletes in parallel."""

    def __init__(self, file_io: FileIO, threads: int = DELETE_THREADS):
        self.file_io = file_io
        self.threads = threads

    def list_dir(self, directory: str) -> list[FileStatus]:
        """Children as the FileIO reports them, named under `directory` (keeping its scheme)."""
        base = directory.rstrip("/")
        result = []
        for s in self.file_io.list_status(directory) or []:
            is_dir = s.type == pafs.FileType.Directory
            name = s.path.rstrip("/").rsplit("/", 1)[-1]
            result.append(FileStatus(f"{base}/{name}", int(s.size or 0), _mtime_ms(s), is_dir))
        return result

    def _delete_one(self, path: str) -> bool:
        """Delete one file; False if it was already gone."""
        return bool(self.file_io.delete(path, False))

    def delete_files(self, paths: Sequence[str]) -> int:
        """One request per file on a small pool (the S3 issue replaces this with DeleteObjects)."""
        if not paths:
            return 0
        with ThreadPoolExecutor(max_workers=min(self.threads, len(paths))) as pool:
            return sum(pool.map(self._delete_one, paths))


def table_files(table: FileStoreTable) -> TableFiles:
    """The store behind a table: the local fast path, or the table's FileIO."""
    if local_path(table.table_path) is not None:
        return LocalFiles()
    return FileIOFiles(table.file_io)


def delete_logged(files: TableFiles, paths: Sequence[str], what: str, batch: int = 1000) -> int:
    """Delete in batches with a progress line per batch, so long deletions show movement."""
    deleted = 0
    for start in range(0, len(paths), batch):
        deleted += files.delete_files(paths[start : start + batch])
        if len(paths) > batch:
            log.info("deleted %d/%d %s", min(start + batch, len(paths)), len(paths), what)
    return deleted
