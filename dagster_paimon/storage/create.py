"""Create-if-absent whose outcome is never misread: the step that decides who owns a snapshot.

A conditional create can land while its answer is lost: the connection drops after the store
wrote the object, a 500 comes back, the body is cut, or a retried request meets the object
its first attempt made and hears "already exists". Answering "lost race" then makes the committer
delete the files its own, now-published snapshot names. So every answer but a plain success is
resolved by reading the name back: our exact bytes mean ours, other bytes mean another writer's,
absence means nothing landed and the create is tried again. If the store never lets us tell,
CommitOutcomeUnknownError says so and nothing is deleted.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from dagster_paimon.errors import CommitOutcomeUnknownError, TransientStoreError
from dagster_paimon.storage.retry import RetryPolicy, error_code, is_transient, retrying

log = logging.getLogger(__name__)

# put(): True when this request created the name, False when the store says it exists
Put = Callable[[], bool]
# read(): the bytes stored under the name, None when there is none
Read = Callable[[], bytes | None]


def create_resolved(path: str, body: bytes, put: Put, read: Read, policy: RetryPolicy) -> bool:
    """True if `path` now holds `body` because of us, False if another writer created it first.

    Any failed create may have landed, so each is followed by a read. Raises
    CommitOutcomeUnknownError when the store kept failing before the outcome was known, and the
    create's own error when it did not land and is not worth retrying (access denied, a full disk).
    """
    last: BaseException | None = None
    for attempt in range(1, policy.attempts + 1):
        try:
            if put():
                return True
        except Exception as e:
            last = e
            log.debug("create of %s may or may not have landed (%s); reading it back", path, e)
        try:
            existing = retrying("GET", path, read, policy)
        except TransientStoreError as e:
            raise _unknown(path, e, "nor read it back") from e
        if existing is not None:
            if existing != body:
                log.debug("%s was created by another writer", path)
            return existing == body
        if last is not None and not is_transient(last):
            raise last
        time.sleep(policy.delay(attempt - 1))
    raise _unknown(path, last, "in any attempt; it was absent when last read")


def _unknown(path: str, cause: BaseException | None, how: str) -> CommitOutcomeUnknownError:
    """The error for a create nobody can say landed or not."""
    code = error_code(cause) if cause is not None else "unknown"
    return CommitOutcomeUnknownError(
        f"could not create {path} {how} ({code}: {cause}); a delayed write may still land",
        operation="PUT",
        key=path,
        code=code,
    )
