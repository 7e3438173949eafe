"""An S3 warehouse through boto3: settings, specific errors, conditional PUTs, batched deletes."""

from __future__ import annotations

import functools
import ipaddress
import os
import threading
import uuid
from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, fields
from urllib.parse import urlparse

from dagster_paimon.errors import (
    AccessDeniedError,
    BucketNotFoundError,
    EndpointUnreachableError,
    InvalidCredentialsError,
    InvalidOptionError,
    MissingCredentialsError,
    TransientStoreError,
    UnsupportedWarehouseError,
    WarehouseUnreachableError,
)
from dagster_paimon.failpoints import FILE_DELETED, failpoint
from dagster_paimon.options import catalog_boolean, read_option
from dagster_paimon.redaction import masked
from dagster_paimon.storage.create import create_resolved
from dagster_paimon.storage.files import FileStatus
from dagster_paimon.storage.retry import (
    TRANSIENT_CODES,
    RetryPolicy,
    error_code,
    is_transient,
    retrying,
)

S3_SCHEMES = ("s3", "s3a", "s3n")
MAX_DELETE_KEYS = 1000
# proving a warehouse reachable fails fast: a wrong endpoint is not worth a minute of backoff
REACHABILITY_RETRIES = RetryPolicy(attempts=2)
PRECONDITION_FAILED = "PreconditionFailed"
CREDENTIAL_CODES = (
    "InvalidAccessKeyId",
    "SignatureDoesNotMatch",
    "InvalidToken",
    "ExpiredToken",
    "TokenRefreshRequired",
)
WRONG_REGION_CODES = ("AuthorizationHeaderMalformed", "PermanentRedirect", "301")
ACCESS_DENIED_CODES = ("AccessDenied", "AllAccessDisabled", "403")
MISSING_BUCKET_CODES = ("NoSuchBucket",)

ENDPOINT = "fs.s3.endpoint"
REGION = "fs.s3.region"
ACCESS_KEY_ID = "fs.s3.accessKeyId"
SECRET_ACCESS_KEY = "fs.s3.accessKeySecret"
SESSION_TOKEN = "fs.s3.securityToken"
PATH_STYLE = "fs.s3.path-style-access"
ENV = {
    ENDPOINT: "PAIMON_S3_ENDPOINT",
    REGION: "PAIMON_S3_REGION",
    ACCESS_KEY_ID: "PAIMON_S3_ACCESS_KEY_ID",
    SECRET_ACCESS_KEY: "PAIMON_S3_SECRET_ACCESS_KEY",
    SESSION_TOKEN: "PAIMON_S3_SESSION_TOKEN",
    PATH_STYLE: "PAIMON_S3_PATH_STYLE",
}
# boto3's standard variables for a custom endpoint, the S3-specific one first
AWS_ENDPOINT_ENV = ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL")
# pypaimon's S3 file IO also accepts these spellings; ours must read exactly what it reads
OPTION_PREFIXES = ("fs.s3.", "s3.", "fs.s3a.", "s3a.")
OPTION_NAMES = {
    ENDPOINT: ("endpoint",),
    REGION: ("region",),
    ACCESS_KEY_ID: ("accessKeyId", "access-key", "access.key"),
    SECRET_ACCESS_KEY: ("accessKeySecret", "secret-key", "secret.key"),
    SESSION_TOKEN: (
        "securityToken",
        "session-token",
        "session.token",
        "security-token",
        "security.token",
    ),
    PATH_STYLE: ("path-style-access", "path.style.access"),
}


def is_s3_uri(uri: str) -> bool:
    """s3://, s3a:// and s3n:// all name objects in an S3 bucket."""
    return urlparse(uri).scheme in S3_SCHEMES


def split_s3_uri(uri: str) -> tuple[str, str]:
    """(bucket, key) of an s3:// URI; the key has no leading slash."""
    parsed = urlparse(uri)
    if parsed.scheme not in S3_SCHEMES or not parsed.netloc:
        raise InvalidOptionError(f"not an S3 location with a bucket: {uri!r}")
    return parsed.netloc, parsed.path.lstrip("/")


def _spellings(key: str) -> list[str]:
    """Every name of an S3 option, in the order pypaimon looks for them."""
    return [prefix + name for name in OPTION_NAMES[key] for prefix in OPTION_PREFIXES]


def _option(options: Mapping[str, str], key: str) -> str | None:
    """The first set spelling of an S3 option."""
    for name in _spellings(key):
        value = options.get(name)
        if value:
            return str(value)
    return None


def path_style_endpoint(endpoint: str | None) -> bool:
    """Whether buckets at this endpoint need path-style addressing: an IP address or localhost
    has no per-bucket DNS names (boto3 decides the same way)."""
    if not endpoint:
        return False
    host = urlparse(endpoint if "://" in endpoint else f"//{endpoint}").hostname or ""
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


@dataclass(frozen=True)
class S3Settings:
    """How to reach an S3-compatible store; unset credentials fall back to boto3's chain."""

    endpoint: str | None = None
    region: str | None = None
    access_key_id: str | None = None
    secret_access_key: str | None = None
    session_token: str | None = None
    path_style: bool = False

    def __repr__(self) -> str:
        """The settings with the secret key and session token masked: they end up in logs."""
        shown = (f"{f.name}={masked(f.name, getattr(self, f.name))!r}" for f in fields(self))
        return f"S3Settings({', '.join(shown)})"

    @classmethod
    def from_options(
        cls, options: Mapping[str, str], environ: Mapping[str, str] | None = None
    ) -> S3Settings:
        """Read the S3 catalog options, in every spelling pypaimon's own S3 file IO reads.

        Without an endpoint option, AWS_ENDPOINT_URL_S3 / AWS_ENDPOINT_URL (boto3's variables)
        give it; without a path-style option, it is chosen from the endpoint.
        """
        environ = os.environ if environ is None else environ
        endpoint = _option(options, ENDPOINT) or next(
            (environ[v] for v in AWS_ENDPOINT_ENV if environ.get(v)), None
        )
        settings = cls(
            endpoint=endpoint,
            region=_option(options, REGION),
            access_key_id=_option(options, ACCESS_KEY_ID),
            secret_access_key=_option(options, SECRET_ACCESS_KEY),
            session_token=_option(options, SESSION_TOKEN),
            path_style=read_option(
                options,
                PATH_STYLE,
                catalog_boolean,
                path_style_endpoint(endpoint),
                _spellings(PATH_STYLE)[1:],
            ),
        )
        settings.validate()
        return settings

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> S3Settings:
        """Settings from the PAIMON_S3_* variables the CLI and the example deployment share
        (and AWS_ENDPOINT_URL[_S3] when PAIMON_S3_ENDPOINT is unset)."""
        options = {key: environ[var] for key, var in ENV.items() if var in environ}
        return cls.from_options(options, environ)

    def validate(self) -> None:
        """A key without its secret (or the reverse) is a typo, not a request for the chain."""
        if bool(self.access_key_id) != bool(self.secret_access_key):
            given, missing = (
                (ACCESS_KEY_ID, SECRET_ACCESS_KEY)
                if self.access_key_id
                else (SECRET_ACCESS_KEY, ACCESS_KEY_ID)
            )
            raise MissingCredentialsError(
                f"S3 credentials are incomplete: {given} is set but {missing} is not"
            )
        if self.session_token and not self.access_key_id:
            raise MissingCredentialsError(
                f"{SESSION_TOKEN} is set without {ACCESS_KEY_ID} and {SECRET_ACCESS_KEY}"
            )

    def catalog_options(self) -> dict[str, str]:
        """The fs.s3.* options to hand pypaimon, only those that are set."""
        options = {
            ENDPOINT: self.endpoint,
            REGION: self.region,
            ACCESS_KEY_ID: self.access_key_id,
            SECRET_ACCESS_KEY: self.secret_access_key,
            SESSION_TOKEN: self.session_token,
        }
        result = {k: v for k, v in options.items() if v}
        if self.path_style:
            result[PATH_STYLE] = "true"
        return result

    def client(self):
        """A shared, thread-safe boto3 S3 client for these settings; it never retries by
        itself: every call goes through storage/retry.py, which logs and classifies."""
        return _client(self)


_client_lock = threading.Lock()


@functools.lru_cache(maxsize=32)
def _client(settings: S3Settings):
    """Build a client once per settings: creation is slow and not thread-safe, use is both."""
    import boto3
    from botocore.config import Config

    endpoint = settings.endpoint
    if endpoint and "://" not in endpoint:
        endpoint = f"https://{endpoint}"
    config = Config(
        s3={"addressing_style": "path" if settings.path_style else "auto"},
        retries={"total_max_attempts": 1, "mode": "standard"},
        connect_timeout=10,
        read_timeout=60,
    )
    with _client_lock:
        return boto3.session.Session().client(
            "s3",
            endpoint_url=endpoint,
            region_name=settings.region,
            aws_access_key_id=settings.access_key_id,
            aws_secret_access_key=settings.secret_access_key,
            aws_session_token=settings.session_token,
            config=config,
        )


def specific_error(
    e: Exception, uri: str, settings: S3Settings
) -> WarehouseUnreachableError | None:
    """Our error for a boto3 failure that says the warehouse cannot be reached, else None."""
    from botocore.exceptions import (
        ConnectTimeoutError,
        EndpointConnectionError,
        NoCredentialsError,
        PartialCredentialsError,
    )

    bucket = split_s3_uri(uri)[0]
    where = settings.endpoint or "AWS S3"
    if isinstance(e, (NoCredentialsError, PartialCredentialsError)):
        return MissingCredentialsError(
            f"no S3 credentials for {uri}: set {ACCESS_KEY_ID} and {SECRET_ACCESS_KEY} "
            "(s3_access_key_id / s3_secret_access_key on the Dagster resource) or configure "
            "boto3's credential chain (AWS_ACCESS_KEY_ID, AWS_PROFILE, an instance role)"
        )
    if isinstance(e, (EndpointConnectionError, ConnectTimeoutError)):
        return EndpointUnreachableError(
            f"cannot connect to the S3 endpoint {where} for {uri}: {e}; check {ENDPOINT}"
        )
    code = error_code(e)
    if code in CREDENTIAL_CODES:
        key = settings.access_key_id or "from boto3's credential chain"
        return InvalidCredentialsError(
            f"{where} rejected the S3 credentials for {uri} ({code}): check the access key "
            f"({key}), its secret and any session token"
        )
    if code in MISSING_BUCKET_CODES:
        return BucketNotFoundError(
            f"bucket {bucket!r} does not exist on {where}; create it before using {uri}"
        )
    if code in WRONG_REGION_CODES:
        return WarehouseUnreachableError(
            f"bucket {bucket!r} is not in region {settings.region or '(default)'} ({code}); "
            f"set {REGION} to the bucket's region"
        )
    if code in ACCESS_DENIED_CODES:
        return AccessDeniedError(
            f"access denied to {uri} on {where} ({code}): the credentials are valid but not "
            "allowed this request; the warehouse needs list, read, write and delete on its prefix"
        )
    return None


@contextmanager
def s3_errors(uri: str, settings: S3Settings) -> Iterator[None]:
    """Turn boto3 failures that mean 'cannot reach the warehouse' into specific errors; a
    transient failure stays as it is, for the retry around it."""
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        yield
    except (BotoCoreError, ClientError) as e:
        specific = None if is_transient(e) else specific_error(e, uri, settings)
        if specific is None:
            raise
        raise specific from e


def check_reachable(uri: str, settings: S3Settings) -> None:
    """One LIST under the warehouse proves endpoint, credentials and bucket before any write."""
    bucket, key = split_s3_uri(uri)
    try:
        with s3_errors(uri, settings):
            retrying(
                "LIST",
                uri,
                lambda: settings.client().list_objects_v2(Bucket=bucket, Prefix=key, MaxKeys=1),
                REACHABILITY_RETRIES,
            )
    except TransientStoreError as e:
        cause = e.__cause__
        specific = specific_error(cause, uri, settings) if isinstance(cause, Exception) else None
        if specific is None:
            raise
        raise specific from cause


_conditional_stores: set[tuple[str | None, str]] = set()
_conditional_lock = threading.Lock()


def _put_new(settings: S3Settings, bucket: str, key: str, body: bytes) -> bool:
    """One PUT with If-None-Match: *; False when the store says the key exists (412)."""
    from botocore.exceptions import ClientError

    try:
        with s3_errors(f"s3://{bucket}/{key}", settings):
            settings.client().put_object(Bucket=bucket, Key=key, Body=body, IfNoneMatch="*")
    except ClientError as e:
        if error_code(e) == PRECONDITION_FAILED:
            return False
        raise
    return True


def _get(settings: S3Settings, bucket: str, key: str) -> bytes | None:
    """The object's bytes, None if there is none; a body cut short raises (transient)."""
    from botocore.exceptions import ClientError

    try:
        with s3_errors(f"s3://{bucket}/{key}", settings):
            return settings.client().get_object(Bucket=bucket, Key=key)["Body"].read()
    except ClientError as e:
        if error_code(e) in ("NoSuchKey", "404"):
            return None
        raise


def _create(settings: S3Settings, bucket: str, key: str, body: bytes) -> bool:
    """A conditional PUT resolved by reading back whenever its answer is not a plain success."""
    return create_resolved(
        f"s3://{bucket}/{key}",
        body,
        lambda: _put_new(settings, bucket, key, body),
        lambda: _get(settings, bucket, key),
        RetryPolicy.from_env(),
    )


def check_conditional_writes(settings: S3Settings, path: str) -> None:
    """Prove once per process and bucket that the store refuses a second create of a key.

    A store that ignores If-None-Match would let two committers both win a snapshot id. The two
    creates carry different bytes, so a retried first create is not taken for a refusal.
    """
    bucket, key = split_s3_uri(path)
    store = (settings.endpoint, bucket)
    if store in _conditional_stores:
        return
    probe = f"{key.rsplit('/', 1)[0]}/.conditional-write-probe-{uuid.uuid4().hex}"
    try:
        _create(settings, bucket, probe, b"first")
        refused = not _create(settings, bucket, probe, b"second")
    finally:
        S3Files(settings).delete_files([f"s3://{bucket}/{probe}"])
    if not refused:
        raise UnsupportedWarehouseError(
            f"{settings.endpoint or 'the S3 store'} ignores If-None-Match on PUT, so commits to "
            f"s3://{bucket} could silently overwrite each other; use a store with conditional "
            "writes (AWS S3 and recent MinIO releases support them)"
        )
    with _conditional_lock:
        _conditional_stores.add(store)


def put_if_absent(settings: S3Settings, path: str, content: str) -> bool:
    """True if this call created `path` with `content`; False if another writer created it.

    S3 itself lets exactly one conditional PUT (If-None-Match: *) create a key; storage/create.py
    tells a lost answer to our own PUT from another writer's object.
    """
    check_conditional_writes(settings, path)
    bucket, key = split_s3_uri(path)
    return _create(settings, bucket, key, content.encode("utf-8"))


class S3Files:
    """Paginated listings with LastModified ages, and deletes batched into DeleteObjects."""

    def __init__(self, settings: S3Settings):
        self.settings = settings
        self.policy = RetryPolicy.from_env()

    def list_dir(self, directory: str) -> list[FileStatus]:
        """Objects and common prefixes one level under `directory`, over every result page;
        each page is retried on its own."""
        bucket, key = split_s3_uri(directory)
        prefix = f"{key.rstrip('/')}/" if key.strip("/") else ""
        base = directory.rstrip("/")
        result: list[FileStatus] = []
        client = self.settings.client()
        request = {"Bucket": bucket, "Prefix": prefix, "Delimiter": "/"}
        while True:
            with s3_errors(directory, self.settings):
                page = retrying(
                    "LIST",
                    directory,
                    functools.partial(client.list_objects_v2, **request),
                    self.policy,
                )
            for obj in page.get("Contents", []):
                name = obj["Key"][len(prefix) :]
                if not name:
                    continue
                mtime_ms = int(obj["LastModified"].timestamp() * 1000)
                result.append(FileStatus(f"{base}/{name}", int(obj["Size"]), mtime_ms, False))
            for common in page.get("CommonPrefixes", []):
                name = common["Prefix"][len(prefix) :].rstrip("/")
                result.append(FileStatus(f"{base}/{name}", 0, 0, True))
            if not page.get("IsTruncated"):
                return result
            request = {**request, "ContinuationToken": page["NextContinuationToken"]}

    def delete_files(self, paths: Sequence[str]) -> int:
        """DeleteObjects per bucket, at most 1,000 keys a request; S3 counts absent keys deleted,
        so a retried batch (or a key refused transiently) is simply asked again."""
        by_bucket: dict[str, list[str]] = defaultdict(list)
        for path in paths:
            bucket, key = split_s3_uri(path)
            by_bucket[bucket].append(key)
        deleted = 0
        for bucket, keys in by_bucket.items():
            for start in range(0, len(keys), MAX_DELETE_KEYS):
                batch = keys[start : start + MAX_DELETE_KEYS]
                retrying(
                    "DELETE",
                    f"s3://{bucket}/{batch[0]} (+{len(batch) - 1} more)",
                    functools.partial(self._delete_batch, bucket, batch),
                    self.policy,
                )
                deleted += len(batch)
                failpoint(FILE_DELETED)
        return deleted

    def _delete_batch(self, bucket: str, keys: list[str]) -> None:
        """One DeleteObjects; keys the store refused transiently raise to be asked again."""
        with s3_errors(f"s3://{bucket}/", self.settings):
            response = self.settings.client().delete_objects(
                Bucket=bucket, Delete={"Objects": [{"Key": k} for k in keys], "Quiet": True}
            )
        errors = response.get("Errors", [])
        if not errors:
            return
        shown = ", ".join(f"{e['Key']} ({e.get('Code')})" for e in errors[:3])
        message = f"S3 refused to delete {len(errors)} of {len(keys)} objects in s3://{bucket}: "
        if all(e.get("Code") in TRANSIENT_CODES for e in errors):
            raise ConnectionError(message + shown)
        raise OSError(message + shown)
