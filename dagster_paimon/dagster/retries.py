"""Runs that failed because the store kept failing transiently are retried by Dagster.

A TransientStoreError means every request was retried and the table is sound (see
docs/object-stores.md), so the whole operation may simply run again later: the op asks Dagster
for a retry (RetryRequested, Dagster's own way to mark a failure retryable) with growing waits.
Any other failure fails the run as before, and so does one after which a retry could apply a
change twice (an append whose snapshot may have landed).
"""

import os
from collections.abc import Iterator
from contextlib import contextmanager

from dagster import OpExecutionContext, RetryRequested

from dagster_paimon.errors import transient_cause

TRANSIENT_RETRIES = 3
WAIT_ENV = "DAGSTER_PAIMON_RETRY_WAIT_S"
FIRST_WAIT_S = 60


@contextmanager
def retried_when_transient(context: OpExecutionContext) -> Iterator[None]:
    """Turn a TransientStoreError into RetryRequested: 1, 2, then 4 minutes later (the first
    wait is DAGSTER_PAIMON_RETRY_WAIT_S seconds when set)."""
    try:
        yield
    except Exception as error:
        e = transient_cause(error)
        if e is None or not e.retry_safe:
            raise
        first = float(os.environ.get(WAIT_ENV) or FIRST_WAIT_S)
        wait = first * 2**context.retry_number
        context.log.warning(
            f"the store kept failing transiently ({e.code} on {e.key}); retry "
            f"{context.retry_number + 1} of {TRANSIENT_RETRIES} in {wait} s: {e}"
        )
        raise RetryRequested(max_retries=TRANSIENT_RETRIES, seconds_to_wait=wait) from error
