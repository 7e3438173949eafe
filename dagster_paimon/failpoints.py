"""Failpoints: named steps of every table-changing operation where a test can kill the process.

A process whose environment sets `DAGSTER_PAIMON_FAILPOINT=<name>` (or `<name>@<n>` for the
n-th time the step is reached) sends itself SIGKILL there: no exception handler, `finally` or
clean-up runs, exactly as when a machine dies. Unset, a failpoint costs one dict lookup.
"""

from __future__ import annotations

import os
import signal
import threading
from collections import Counter

from dagster_paimon.errors import InvalidArgumentError

ENV = "DAGSTER_PAIMON_FAILPOINT"

DATA_FILE_WRITTEN = "data-file-written"
INDEX_FILE_WRITTEN = "index-file-written"
FILES_RESEQUENCED = "files-resequenced"
MANIFESTS_WRITTEN = "manifests-written"
MANIFEST_LIST_WRITTEN = "manifest-list-written"
BEFORE_SNAPSHOT = "before-snapshot"
AFTER_SNAPSHOT = "after-snapshot"
FILE_DELETED = "file-deleted"
DATA_FILES_EXPIRED = "data-files-expired"
METADATA_EXPIRED = "metadata-expired"
RECORDS_EXPIRED = "records-expired"
ROLLBACK_LATEST_MOVED = "rollback-latest-moved"
ROLLBACK_RECORDS_REMOVED = "rollback-records-removed"
TAG_WRITTEN = "tag-written"
CONSUMERS_REMOVED = "consumers-removed"
CONSUMER_RESET = "consumer-reset"
# a local metadata file's synced temp file, not yet renamed or linked into place
TEMP_FILE_WRITTEN = "temp-file-written"

ALL = (
    DATA_FILE_WRITTEN,
    INDEX_FILE_WRITTEN,
    FILES_RESEQUENCED,
    MANIFESTS_WRITTEN,
    MANIFEST_LIST_WRITTEN,
    BEFORE_SNAPSHOT,
    AFTER_SNAPSHOT,
    FILE_DELETED,
    DATA_FILES_EXPIRED,
    METADATA_EXPIRED,
    RECORDS_EXPIRED,
    ROLLBACK_LATEST_MOVED,
    ROLLBACK_RECORDS_REMOVED,
    TAG_WRITTEN,
    CONSUMERS_REMOVED,
    CONSUMER_RESET,
    TEMP_FILE_WRITTEN,
)

_hits: Counter[str] = Counter()
_lock = threading.Lock()


def _armed() -> tuple[str, int] | None:
    """The failpoint the environment arms and on which hit it fires, if any."""
    value = os.environ.get(ENV)
    if not value:
        return None
    name, _, nth = value.partition("@")
    if name not in ALL:
        raise InvalidArgumentError(f"{ENV}={value!r} names no failpoint; known: {', '.join(ALL)}")
    return name, int(nth) if nth else 1


def failpoint(name: str) -> None:
    """Kill this process (SIGKILL) if the environment arms this step and its hit has come."""
    armed = _armed()
    if armed is None or armed[0] != name:
        return
    with _lock:
        _hits[name] += 1
        due = _hits[name] == armed[1]
    if due:
        os.kill(os.getpid(), signal.SIGKILL)
