"""The retry policy: which failures are transient, how they are retried, what gives up."""

from __future__ import annotations

import logging
import pickle

import pytest
from botocore.exceptions import (
    ClientError,
    ConnectionClosedError,
    IncompleteReadError,
    NoCredentialsError,
    ReadTimeoutError,
)

from dagster_paimon.errors import InvalidOptionError, TransientStoreError, transient_cause
from dagster_paimon.storage.retry import RetryPolicy, error_code, is_transient, retrying

QUICK = RetryPolicy(attempts=4, base_s=0.001, cap_s=0.002)


def client_error(code: str, status: int) -> ClientError:
    """A boto3 error answer as botocore builds it."""
    response = {
        "Error": {"Code": code, "Message": code},
        "ResponseMetadata": {"HTTPStatusCode": status},
    }
    return ClientError(response, "GetObject")


@pytest.mark.parametrize(
    "error",
    [
        client_error("SlowDown", 503),
        client_error("InternalError", 500),
        client_error("ServiceUnavailable", 503),
        client_error("", 502),
        client_error("TooManyRequests", 429),
        ConnectionClosedError(endpoint_url="http://s3"),
        ReadTimeoutError(endpoint_url="http://s3"),
        IncompleteReadError(actual_bytes=3, expected_bytes=10),
        OSError("AWS Error SLOW_DOWN during GetObject operation: Please reduce your request rate."),
        OSError(
            "AWS Error INTERNAL_FAILURE during GetObject operation: Failed to flush response "
            "stream (eof: 0, bad: 1)"
        ),
        OSError("AWS Error NETWORK_CONNECTION during HeadObject operation: curlCode: 56"),
        OSError(
            "AWS Error UNKNOWN (HTTP status 503) during PutObject operation: "
            "HTTP response code: 503"
        ),
        ConnectionResetError(104, "Connection reset by peer"),
    ],
)
def test_throttling_5xx_and_dropped_connections_are_transient(error):
    assert is_transient(error)


@pytest.mark.parametrize(
    "error",
    [
        client_error("NoSuchKey", 404),
        client_error("AccessDenied", 403),
        client_error("PreconditionFailed", 412),
        client_error("InvalidAccessKeyId", 403),
        NoCredentialsError(),
        FileNotFoundError("data-1.parquet"),
        OSError("AWS Error ACCESS_DENIED during GetObject operation: Access Denied"),
        ValueError("not a store failure"),
    ],
)
def test_missing_keys_refusals_and_bad_input_are_not(error):
    assert not is_transient(error)


def test_a_request_is_retried_until_it_succeeds_and_each_retry_is_logged(caplog):
    failures = [client_error("SlowDown", 503), ConnectionClosedError(endpoint_url="http://s3")]
    calls = []

    def request() -> str:
        calls.append(1)
        if failures:
            raise failures.pop(0)
        return "body"

    with caplog.at_level(logging.DEBUG, logger="dagster_paimon.storage.retry"):
        assert retrying("GET", "s3://b/t/snapshot/snapshot-3", request, QUICK) == "body"
    assert len(calls) == 3
    retries = [r.getMessage() for r in caplog.records]
    assert len(retries) == 2
    assert all("s3://b/t/snapshot/snapshot-3" in m for m in retries)
    assert "SlowDown" in retries[0] and "ConnectionClosedError" in retries[1]


def test_a_permanent_failure_is_raised_at_once():
    calls = []

    def request() -> None:
        calls.append(1)
        raise client_error("AccessDenied", 403)

    with pytest.raises(ClientError):
        retrying("PUT", "s3://b/k", request, QUICK)
    assert len(calls) == 1


def test_a_failure_that_outlasts_every_attempt_names_the_request_key_and_code():
    def request() -> None:
        raise client_error("SlowDown", 503)

    with pytest.raises(TransientStoreError) as failure:
        retrying("LIST", "s3://b/wh/db.db/t/snapshot", request, QUICK)
    error = failure.value
    assert (error.operation, error.key, error.code) == (
        "LIST",
        "s3://b/wh/db.db/t/snapshot",
        "SlowDown",
    )
    assert "failed 4 times" in str(error) and error.retry_safe
    assert isinstance(error.__cause__, ClientError)


def test_a_wrapped_transient_failure_is_found_behind_the_wrapper():
    inner = TransientStoreError("GET of k failed", operation="GET", key="k", code="SlowDown")
    try:
        try:
            raise inner
        except TransientStoreError as e:
            raise RuntimeError("Failed to load schema") from e
    except RuntimeError as outer:
        assert transient_cause(outer) is inner
    assert transient_cause(ValueError("x")) is None


def test_backoff_doubles_to_its_cap_with_half_of_it_random():
    policy = RetryPolicy(attempts=10, base_s=0.1, cap_s=1.0)
    for retry, ceiling in [(0, 0.1), (1, 0.2), (3, 0.8), (4, 1.0), (9, 1.0)]:
        delays = [policy.delay(retry) for _ in range(50)]
        assert all(ceiling / 2 <= d <= ceiling for d in delays)
        assert max(delays) - min(delays) > 0


def test_settings_come_from_the_environment_and_are_checked():
    policy = RetryPolicy.from_env(
        {
            "PAIMON_S3_RETRY_ATTEMPTS": "3",
            "PAIMON_S3_RETRY_BASE_MS": "50",
            "PAIMON_S3_RETRY_MAX_MS": "400",
        }
    )
    assert policy == RetryPolicy(attempts=3, base_s=0.05, cap_s=0.4)
    assert RetryPolicy.from_env({}) == RetryPolicy()
    for bad in ({"PAIMON_S3_RETRY_ATTEMPTS": "0"}, {"PAIMON_S3_RETRY_BASE_MS": "soon"}):
        with pytest.raises(InvalidOptionError, match=next(iter(bad))):
            RetryPolicy.from_env(bad)


def test_error_codes_come_from_the_store_answer_or_the_sdk():
    assert error_code(client_error("SlowDown", 503)) == "SlowDown"
    assert error_code(OSError("AWS Error SLOW_DOWN during GetObject operation: x")) == "SLOW_DOWN"
    assert error_code(ConnectionResetError()) == "ConnectionResetError"


def test_a_transient_error_survives_the_trip_back_from_a_spark_executor():
    error = TransientStoreError("GET of k failed", operation="GET", key="k", code="SlowDown")
    error.judge(True)
    back = pickle.loads(pickle.dumps(error))
    assert (back.operation, back.key, back.code, back.table_unchanged) == (
        "GET",
        "k",
        "SlowDown",
        True,
    )
    assert str(back) == str(error)
