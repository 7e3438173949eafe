"""`snapshot.clean-empty-directories`: the directories expiry emptied, removed as Java does.

Java's FileDeletionBase.cleanEmptyDirectories, run by snapshot and changelog expiry when the
option (or its old name `snapshot.expire.clean-empty-directories`) is true: each bucket
directory a deleted data file lived in is removed if empty; where a partition's deepest
directory then is empty too it goes, and so do its parents that are left empty, deepest first.
Only a local warehouse has directories to remove (an object store has none); files under
external data paths are left alone, as their directories are not the table's.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence

from dagster_paimon.options import flag
from dagster_paimon.storage.local import local_path

log = logging.getLogger(__name__)

CLEAN_EMPTY_DIRECTORIES = "snapshot.clean-empty-directories"
CLEAN_EMPTY_DIRECTORIES_FALLBACK = "snapshot.expire.clean-empty-directories"
BUCKET_PREFIX = "bucket-"


def clean_empty_directories_enabled(options: Mapping[str, str]) -> bool:
    """The option, false unless set (Paimon's default)."""
    return flag(options, CLEAN_EMPTY_DIRECTORIES, (CLEAN_EMPTY_DIRECTORIES_FALLBACK,))


def _try_rmdir(path: str) -> bool:
    """Remove a directory if it is empty (Java's tryDeleteEmptyDirectory); False otherwise."""
    try:
        os.rmdir(path)
    except OSError:
        return False
    return True


def clean_empty_directories(root: str, deleted: Sequence[str]) -> int:
    """Remove the bucket and partition directories `deleted` files left empty under the table
    `root`; how many were removed."""
    base = local_path(root)
    if base is None:
        return 0
    base = os.path.normpath(base)
    buckets: set[str] = set()
    for path in deleted:
        local = local_path(path)
        if local is None:
            continue
        directory = os.path.dirname(os.path.normpath(local))
        if os.path.basename(directory).startswith(BUCKET_PREFIX) and directory.startswith(
            base + os.sep
        ):
            buckets.add(directory)
    removed = 0
    parents: dict[int, set[str]] = {}
    for bucket in sorted(buckets):
        removed += _try_rmdir(bucket)
        partition = os.path.dirname(bucket)
        if partition == base:
            continue  # an unpartitioned table
        if _try_rmdir(partition):
            removed += 1
            depth = 0
            higher = os.path.dirname(partition)
            while higher != base and higher.startswith(base + os.sep):
                parents.setdefault(depth, set()).add(higher)
                higher = os.path.dirname(higher)
                depth += 1
    for depth in sorted(parents):  # the nearest parents first: deepest to shallowest
        for directory in sorted(parents[depth]):
            removed += _try_rmdir(directory)
    if removed:
        log.info("removed %d empty directories under %s", removed, root)
    return removed
