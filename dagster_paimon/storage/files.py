"""Listing and deleting table files: what maintenance needs from any store."""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

log = logging.getLogger(__name__)

DELETE_BATCH = 1000

# `.<name>.<uuid>.tmp`: what an atomic write (ours, pypaimon's, Java's Path.createTempPath) puts
# beside its target and renames into place; a kill between the write and the rename leaves it
_TEMP_NAME = re.compile(r"\..+\.[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\.tmp")


def temp_name(name: str) -> str:
    """A fresh temp name for `name`, spelled as Paimon spells it so either side can clean it."""
    return f".{name}.{uuid.uuid4()}.tmp"


def is_temp_name(name: str) -> bool:
    """Whether a file name is an atomic write's temp file (never a record, hint or data file)."""
    return _TEMP_NAME.fullmatch(name) is not None


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
    """The store behind a table, as maintenance lists and deletes it."""

    def list_dir(self, directory: str) -> list[FileStatus]:
        """Direct children of a directory; a missing directory lists as empty."""
        ...

    def delete_files(self, paths: Sequence[str]) -> int:
        """Delete files (never directories) and return how many the store reports deleted."""
        ...


def delete_logged(files: TableFiles, paths: Sequence[str], what: str) -> int:
    """Delete in batches with a progress line per batch, so long deletions show movement."""
    deleted = 0
    for start in range(0, len(paths), DELETE_BATCH):
        deleted += files.delete_files(paths[start : start + DELETE_BATCH])
        if len(paths) > DELETE_BATCH:
            log.info("deleted %d/%d %s", min(start + DELETE_BATCH, len(paths)), len(paths), what)
    return deleted


def file_exists(file_io: Any, path: str) -> bool:
    """Whether a file exists: one HEAD on S3 (storage/arrow_s3.py), where pypaimon's exists
    also LISTs after a 404 to look for a directory."""
    probe = getattr(file_io, "file_exists", None)
    return bool(probe(path) if probe is not None else file_io.exists(path))
