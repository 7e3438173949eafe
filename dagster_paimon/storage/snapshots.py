"""Create a snapshot file only if absent: the one atomic step every commit relies on."""

from __future__ import annotations

import contextlib
import logging
import os
import uuid
from urllib.parse import urlparse

from pypaimon.common.file_io import FileIO

log = logging.getLogger(__name__)


def local_path(path: str) -> str | None:
    """The filesystem path of a local location, or None for an object-store URI."""
    parsed = urlparse(path)
    if parsed.scheme == "":
        return path
    if parsed.scheme == "file":
        return parsed.path
    return None


def _create_local_if_absent(path: str, content: str) -> bool:
    """Write a temp file, then hard-link it into place: link fails if the name exists."""
    directory = os.path.dirname(path)
    os.makedirs(directory, exist_ok=True)
    temp = os.path.join(directory, f".{os.path.basename(path)}.{uuid.uuid4()}.tmp")
    try:
        with open(temp, "w", encoding="utf-8") as f:
            f.write(content)
            f.flush()
            os.fsync(f.fileno())
        try:
            os.link(temp, path)
        except FileExistsError:
            return False
        return True
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)


S3_SCHEMES = ("s3", "s3a", "s3n")
LOST_RACE_CODES = ("PreconditionFailed", "ConditionalRequestConflict")


def _s3_client(file_io: FileIO):
    """A boto3 client with the catalog's fs.s3.* settings; unset ones use boto3's chain."""
    import boto3

    props = file_io.properties.to_map() if hasattr(file_io, "properties") else {}
    endpoint = props.get("fs.s3.endpoint")
    if endpoint and "://" not in endpoint:
        endpoint = f"https://{endpoint}"
    return boto3.client(
        "s3",
        endpoint_url=endpoint or None,
        region_name=props.get("fs.s3.region") or None,
        aws_access_key_id=props.get("fs.s3.accessKeyId") or None,
        aws_secret_access_key=props.get("fs.s3.accessKeySecret") or None,
        aws_session_token=props.get("fs.s3.securityToken") or None,
    )


def _create_s3_if_absent(file_io: FileIO, path: str, content: str) -> bool:
    """A conditional PUT (If-None-Match: *): S3 itself lets exactly one committer win."""
    from botocore.exceptions import ClientError

    parsed = urlparse(path)
    try:
        _s3_client(file_io).put_object(
            Bucket=parsed.netloc,
            Key=parsed.path.lstrip("/"),
            Body=content.encode("utf-8"),
            IfNoneMatch="*",
        )
    except ClientError as e:
        if e.response.get("Error", {}).get("Code") in LOST_RACE_CODES:
            return False
        raise
    return True


def create_snapshot_if_absent(file_io: FileIO, path: str, content: str) -> bool:
    """True if this call created the file; False if another committer got there first.

    Local disks use a hard link; S3 a conditional write; no lock service either way.
    """
    local = local_path(path)
    if local is not None:
        return _create_local_if_absent(local, content)
    if urlparse(path).scheme in S3_SCHEMES:
        return _create_s3_if_absent(file_io, path, content)
    if file_io.exists(path):
        return False
    return file_io.try_to_write_atomic(path, content)


def update_latest_hint(file_io: FileIO, latest_path: str, snapshot_id: int) -> None:
    """LATEST is only a hint for readers; failing to write it never fails a commit."""
    try:
        file_io.write_file(latest_path, str(snapshot_id), overwrite=True)
    except Exception as e:
        log.warning("could not update the LATEST hint at %s: %s", latest_path, e)
