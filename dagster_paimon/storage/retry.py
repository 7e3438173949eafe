"""One retry policy for every store request: which failures are transient, how long to wait.

Object stores throttle (503 SlowDown, 429), fail (500, 502, 504), drop connections and cut
bodies short; each such failure is retried with capped exponential backoff and jitter, logged at
debug with the object's key. Anything else (a missing key, access denied, bad input) is raised at
once. A request that stays transient through every attempt raises TransientStoreError.
"""

from __future__ import annotations

import http.client
import logging
import os
import random
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from dagster_paimon.errors import InvalidOptionError, TransientStoreError

log = logging.getLogger(__name__)

T = TypeVar("T")

ATTEMPTS_ENV = "PAIMON_S3_RETRY_ATTEMPTS"
BASE_ENV = "PAIMON_S3_RETRY_BASE_MS"
CAP_ENV = "PAIMON_S3_RETRY_MAX_MS"

# S3 error codes (boto3) that mean "try again": throttling and the store's own failures
TRANSIENT_CODES = frozenset(
    {
        "SlowDown",
        "Throttling",
        "ThrottlingException",
        "RequestLimitExceeded",
        "TooManyRequests",
        "TooManyRequestsException",
        "RequestThrottled",
        "InternalError",
        "ServiceUnavailable",
        "RequestTimeout",
        "RequestTimeoutException",
        "OperationAborted",
        "ConditionalRequestConflict",
    }
)
TRANSIENT_STATUS = frozenset({429, 500, 502, 503, 504})
# pyarrow's S3 errors name the AWS SDK's error kind ("AWS Error SLOW_DOWN during GetObject")
_ARROW_ERROR = re.compile(r"AWS Error (\w+) during (\w+) operation")
_ARROW_TRANSIENT = frozenset(
    {
        "SLOW_DOWN",
        "THROTTLING",
        "SERVICE_UNAVAILABLE",
        "INTERNAL_FAILURE",
        "NETWORK_CONNECTION",
        "REQUEST_TIMEOUT",
        "REQUEST_TIME_TOO_SKEWED",
        # a retried CompleteMultipartUpload whose first answer was lost: the upload is gone
        # (done or aborted), and the handler's retry sends the whole object again
        "NO_SUCH_UPLOAD",
    }
)
# an error kind the SDK could not map, with the HTTP status or transport failure beside it
_ARROW_UNKNOWN_TRANSIENT = re.compile(
    r"HTTP response code[:\s]*(429|5\d\d)|curlCode: (7|18|28|52|55|56)|[Cc]onnection reset"
)


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how patiently a transient failure is retried: attempts in all, and the
    backoff before retry n, min(cap, base * 2**n), of which a random half is jitter."""

    attempts: int = 10
    base_s: float = 0.1
    cap_s: float = 20.0

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> RetryPolicy:
        """PAIMON_S3_RETRY_ATTEMPTS, PAIMON_S3_RETRY_BASE_MS and PAIMON_S3_RETRY_MAX_MS."""
        environ = os.environ if environ is None else environ
        default = cls()

        def number(name: str, fallback: float, scale: float) -> float:
            text = environ.get(name)
            if not text:
                return fallback
            try:
                value = float(text)
            except ValueError:
                value = -1
            if value < (1 if name == ATTEMPTS_ENV else 0):
                raise InvalidOptionError(f"{name} must be a positive number, got {text!r}")
            return value * scale

        return cls(
            attempts=int(number(ATTEMPTS_ENV, default.attempts, 1)),
            base_s=number(BASE_ENV, default.base_s, 0.001),
            cap_s=number(CAP_ENV, default.cap_s, 0.001),
        )

    def delay(self, retry: int) -> float:
        """Seconds to wait before retry `retry` (0-based): capped exponential, half jitter."""
        ceiling = min(self.cap_s, self.base_s * (2**retry))
        return ceiling / 2 + random.uniform(0, ceiling / 2)


def error_code(e: BaseException) -> str:
    """The store's name for a failure: an S3 code, an AWS SDK error kind, or the type name."""
    response = getattr(e, "response", None)
    if isinstance(response, dict):
        code = response.get("Error", {}).get("Code")
        if code:
            return str(code)
        status = response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        if status:
            return f"HTTP {status}"
    match = _ARROW_ERROR.search(str(e))
    if match:
        return match.group(1)
    return type(e).__name__


def is_transient(e: BaseException) -> bool:
    """Whether retrying the same request may succeed: throttling, 5xx, transport failures."""
    if isinstance(e, (FileNotFoundError, PermissionError, FileExistsError, IsADirectoryError)):
        return False
    if isinstance(e, TransientStoreError):
        return False
    response = getattr(e, "response", None)
    if isinstance(response, dict):
        code = response.get("Error", {}).get("Code")
        status = response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        return code in TRANSIENT_CODES or status in TRANSIENT_STATUS
    if _botocore_transient(e):
        return True
    if isinstance(e, (ConnectionError, TimeoutError, http.client.HTTPException)):
        return True
    if isinstance(e, OSError):
        text = str(e)
        match = _ARROW_ERROR.search(text)
        if match and match.group(1) in _ARROW_TRANSIENT:
            return True
        return bool(_ARROW_UNKNOWN_TRANSIENT.search(text))
    return False


def _botocore_transient(e: BaseException) -> bool:
    """botocore's transport failures: connection drops, timeouts, bodies cut short."""
    try:
        from botocore import exceptions as bx
        from urllib3 import exceptions as ux
    except ImportError:
        return False
    transport = (
        bx.ConnectionError,
        bx.HTTPClientError,
        bx.IncompleteReadError,
        bx.ResponseStreamingError,
        ux.ProtocolError,
        ux.TimeoutError,
    )
    return isinstance(e, transport) and not isinstance(e, bx.NoCredentialsError)


def gave_up(e: BaseException, operation: str, key: str, attempts: int) -> TransientStoreError:
    """The error raised once a transient failure survived every attempt."""
    code = error_code(e)
    return TransientStoreError(
        f"{operation} of {key} failed {attempts} times with a transient store error ({code}): {e}",
        operation=operation,
        key=key,
        code=code,
    )


def retrying(
    operation: str, key: str, request: Callable[[], T], policy: RetryPolicy | None = None
) -> T:
    """The result of `request`, retried while it fails transiently; logged at debug."""
    policy = policy or RetryPolicy()
    for attempt in range(1, policy.attempts + 1):
        try:
            return request()
        except Exception as e:
            if not is_transient(e):
                raise
            if attempt == policy.attempts:
                raise gave_up(e, operation, key, attempt) from e
            wait = policy.delay(attempt - 1)
            log.debug(
                "retrying %s of %s in %.2fs after attempt %d/%d failed: %s: %s",
                operation,
                key,
                wait,
                attempt,
                policy.attempts,
                error_code(e),
                e,
            )
            time.sleep(wait)
    raise AssertionError("unreachable: the last attempt returns or raises")
