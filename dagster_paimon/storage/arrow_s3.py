"""pypaimon's pyarrow S3 file IO with every request retried as storage/retry.py says.

The AWS SDK inside pyarrow retries some failures itself, but not an error answer to a ranged
GET (it reports "Failed to flush response stream", which it deems permanent) and nothing once a
body was cut; one such answer failed a whole compaction. A pyarrow FileSystemHandler around the
S3 filesystem retries each listing, probe, delete, move and every read at its offset, so the
data, manifest and footer reads of pypaimon and ours all get the same policy; uploads are spooled
and sent whole on close, so one that fails at any of its requests is sent again.

Object stores charge per request, so each costs what it must (issue 39): an object that fits the
memory spool is one PUT (larger ones go multipart, in pyarrow's parts), a write probes no parent
"directory" (a key needs none), the size a PUT sent is remembered, not asked back with a HEAD, and
an object is opened by one GET of its start (all of a metadata file), whose answer gives its size.
"""

from __future__ import annotations

import logging
import re
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import IO, Any, TypeVar
from urllib.parse import urlparse

import pyarrow as pa
import pyarrow.fs as pafs
from botocore.exceptions import ClientError

from dagster_paimon.format.catalog import Options
from dagster_paimon.format.table import FileIO, PyArrowFileIO
from dagster_paimon.storage.retry import RetryPolicy, error_code, retrying
from dagster_paimon.storage.s3 import S3Settings, s3_errors

log = logging.getLogger(__name__)

T = TypeVar("T")

# what an upload keeps in memory before it spools to a temporary file, and copies at a time
SPOOL_MEMORY = 16 << 20
UPLOAD_CHUNK = 8 << 20
# pyarrow's AWS SDK retries a failed request itself this often (quickly, unlogged) before our
# policy sees it: our policy, not the SDK's, is the one that waits and gives up
SDK_ATTEMPTS = 2
# what the GET that opens an object asks for: all of any metadata file, a data file's first part
HEAD_BYTES = 1 << 20
# sizes of objects this process uploaded, kept for the writer's file-size question (a HEAD each)
REMEMBERED_SIZES = 4096


class RetryingInputFile:
    """A random-access S3 object: its first HEAD_BYTES came with the GET that opened it (the
    whole of any metadata file), later reads are ranged GETs, each retried at its offset."""

    def __init__(self, handler: RetryingS3Handler, path: str, head: bytes, size: int):
        self._handler = handler
        self._path = path
        self._head = head
        self._size = size
        self._position = 0
        self.closed = False

    def size(self) -> int:
        """The object's length, known from opening it."""
        return self._size

    def seek(self, offset: int, whence: int = 0) -> int:
        """Move the read position (0: from the start, 1: from here, 2: from the end)."""
        base = (0, self._position, self._size)[whence]
        self._position = base + offset
        return self._position

    def tell(self) -> int:
        """The read position."""
        return self._position

    def read_buffer(self, nbytes: int | None = None) -> pa.Buffer:
        """Up to `nbytes` from the position (the rest without): from the opening GET's bytes
        when they hold them, else one ranged GET."""
        remaining = max(self._size - self._position, 0)
        length = remaining if nbytes is None or nbytes < 0 else min(nbytes, remaining)
        if length == 0:
            return pa.py_buffer(b"")
        offset = self._position
        if offset + length <= len(self._head):
            data = self._head[offset : offset + length]
        else:
            data = self._handler.get_range(self._path, offset, length)[0]
        self._position += len(data)
        return pa.py_buffer(data)

    def read(self, nbytes: int | None = None) -> bytes:
        """Up to `nbytes` from the position, as bytes."""
        return self.read_buffer(nbytes).to_pybytes()

    def readable(self) -> bool:
        """Always: this is an input file."""
        return True

    def seekable(self) -> bool:
        """Always: reads are ranged GETs."""
        return True

    def writable(self) -> bool:
        """Never."""
        return False

    def close(self) -> None:
        """Drop the opening GET's bytes."""
        self._head = b""
        self.closed = True


class SpooledUpload:
    """An object being written: bytes go to a local spool (memory up to SPOOL_MEMORY, then a
    temporary file, as Hadoop's S3A buffers blocks on disk) and are uploaded on close, so a
    failed upload can be sent again without the writer's help."""

    def __init__(self, handler: RetryingS3Handler, path: str, metadata: dict | None):
        self._handler = handler
        self._path = path
        self._metadata = metadata
        # closed in close(), which the writer always calls
        self._spool: IO[bytes] = tempfile.SpooledTemporaryFile(max_size=SPOOL_MEMORY)  # noqa: SIM115
        self.closed = False

    def write(self, data: bytes) -> int:
        """Append to the spool."""
        return self._spool.write(data)

    def tell(self) -> int:
        """Bytes written so far."""
        return self._spool.tell()

    def flush(self) -> None:
        """Nothing leaves before close: an object is uploaded whole."""

    def writable(self) -> bool:
        """Always: this is an output stream."""
        return True

    def readable(self) -> bool:
        """Never."""
        return False

    def seekable(self) -> bool:
        """Never: an output stream only appends."""
        return False

    def close(self) -> None:
        """Upload the spool (retried), then drop it."""
        if self.closed:
            return
        self.closed = True
        try:
            self._handler.upload(self._path, self._spool, self._metadata)
        finally:
            self._spool.close()


class RetryingS3Handler(pafs.FileSystemHandler):
    """Every request of an S3FileSystem, retried while it fails transiently."""

    def __init__(self, native: pafs.S3FileSystem, policy: RetryPolicy, settings: S3Settings):
        self.native = native
        self.policy = policy
        self.settings = settings
        self._sizes: OrderedDict[str, int] = OrderedDict()
        self._sizes_lock = threading.Lock()

    def __eq__(self, other: object) -> bool:
        """Two handlers are equal when their filesystems are."""
        return isinstance(other, RetryingS3Handler) and self.native.equals(other.native)

    def __hash__(self) -> int:
        """Hashable as its filesystem's type."""
        return hash(self.native.type_name)

    def _retry(self, operation: str, key: str, request: Callable[[], T]) -> T:
        return retrying(operation, key, request, self.policy)

    def get_type_name(self) -> str:
        """Named after the filesystem it wraps."""
        return f"retrying-{self.native.type_name}"

    def normalize_path(self, path: str) -> str:
        """As the S3 filesystem normalizes it."""
        return self.native.normalize_path(path)

    def get_file_info(self, paths: list[str]) -> list[pafs.FileInfo]:
        """HEAD each path, the batch retried together."""
        return self._retry("HEAD", ", ".join(paths[:3]), lambda: self.native.get_file_info(paths))

    def get_file_info_selector(self, selector: pafs.FileSelector) -> list[pafs.FileInfo]:
        """LIST a prefix, retried whole (listings have no side effects)."""
        return self._retry("LIST", selector.base_dir, lambda: self.native.get_file_info(selector))

    def create_dir(self, path: str, recursive: bool) -> None:
        """Create a directory marker (idempotent)."""
        self._retry("PUT", path, lambda: self.native.create_dir(path, recursive=recursive))

    def delete_dir(self, path: str) -> None:
        """Delete a directory and what it holds."""
        self._retry("DELETE", path, lambda: self.native.delete_dir(path))

    def delete_dir_contents(self, path: str, missing_dir_ok: bool = False) -> None:
        """Delete what a directory holds."""
        self._retry(
            "DELETE",
            path,
            lambda: self.native.delete_dir_contents(path, missing_dir_ok=missing_dir_ok),
        )

    def delete_root_dir_contents(self) -> None:
        """Refused, as the S3 filesystem refuses it."""
        self.native.delete_dir_contents("/", accept_root_dir=True)

    def delete_file(self, path: str) -> None:
        """Delete one object; gone already after a lost response counts as deleted."""

        def delete() -> None:
            try:
                self.native.delete_file(path)
            except FileNotFoundError:
                if attempts[0] == 0:
                    raise
            finally:
                attempts[0] += 1

        attempts = [0]
        self._retry("DELETE", path, delete)

    def move(self, src: str, dest: str) -> None:
        """Copy then delete, as S3 moves; retried whole."""
        self._retry("MOVE", f"{src} -> {dest}", lambda: self.native.move(src, dest))

    def copy_file(self, src: str, dest: str) -> None:
        """Server-side copy (idempotent)."""
        self._retry("COPY", f"{src} -> {dest}", lambda: self.native.copy_file(src, dest))

    def open_input_stream(self, path: str) -> pa.NativeFile:
        """A sequential reader: the random-access one read from the start."""
        return self.open_input_file(path)

    def open_input_file(self, path: str) -> pa.NativeFile:
        """A random-access reader opened by one GET of its first HEAD_BYTES (no HEAD first:
        the answer says the size), whose every ranged GET is retried."""
        head, size = self.get_range(path, 0, HEAD_BYTES)
        return pa.PythonFile(RetryingInputFile(self, path, head, size), mode="r")

    def head(self, path: str) -> bool:
        """Whether the object exists, in one HEAD (retried)."""
        bucket, key = path.split("/", 1)

        def head() -> bool:
            with s3_errors(f"s3://{path}", self.settings):
                try:
                    self.settings.client().head_object(Bucket=bucket, Key=key)
                except ClientError as e:
                    if error_code(e) in ("NoSuchKey", "404", "NotFound"):
                        return False
                    raise
            return True

        return self._retry("HEAD", path, head)

    def get_range(self, path: str, offset: int, length: int) -> tuple[bytes, int]:
        """Up to `length` bytes at `offset` and the object's size, in one GET (retried, a body
        cut short included); FileNotFoundError if there is no object."""
        bucket, key = path.split("/", 1)
        uri = f"s3://{path}"

        def get() -> tuple[bytes, int]:
            with s3_errors(uri, self.settings):
                try:
                    answer = self.settings.client().get_object(
                        Bucket=bucket, Key=key, Range=f"bytes={offset}-{offset + length - 1}"
                    )
                except ClientError as e:
                    code = error_code(e)
                    if code in ("NoSuchKey", "404"):
                        raise FileNotFoundError(f"{uri} does not exist") from e
                    if code == "InvalidRange":  # an empty object has no first byte
                        return b"", 0
                    raise
                data = answer["Body"].read()
            total = answer.get("ContentRange", "").rpartition("/")[2]
            return data, int(total) if total.isdigit() else len(data)

        return self._retry("GET", path, get)

    def open_output_stream(self, path: str, metadata: dict | None) -> pa.NativeFile:
        """A spooled upload: written locally, uploaded whole on close, the upload retried."""
        return pa.PythonFile(SpooledUpload(self, path, metadata), mode="w")

    def upload(self, path: str, spool: IO[bytes], metadata: dict | None) -> None:
        """Upload a spool's bytes to `path`; a failed attempt starts over (PUT is idempotent).

        Up to SPOOL_MEMORY bytes go as one PUT (a multipart upload would be three requests);
        larger objects as pyarrow's multipart upload."""
        size = spool.seek(0, 2)
        if size <= SPOOL_MEMORY and not metadata:
            spool.seek(0)
            body = spool.read()
            bucket, key = path.split("/", 1)
            uri = f"s3://{path}"

            def put() -> None:
                with s3_errors(uri, self.settings):
                    self.settings.client().put_object(Bucket=bucket, Key=key, Body=body)

            self._retry("PUT", path, put)
        else:

            def multipart() -> None:
                spool.seek(0)
                with self.native.open_output_stream(path, metadata=metadata) as out:
                    while chunk := spool.read(UPLOAD_CHUNK):
                        out.write(chunk)

            self._retry("PUT", path, multipart)
        self._remember(path, size)

    def _remember(self, path: str, size: int) -> None:
        """Keep an uploaded object's size for `uploaded_size`, the oldest dropped past the cap."""
        with self._sizes_lock:
            self._sizes[path] = size
            while len(self._sizes) > REMEMBERED_SIZES:
                self._sizes.popitem(last=False)

    def uploaded_size(self, path: str) -> int | None:
        """The size this handler uploaded to `path` (forgotten once asked), None if unknown."""
        with self._sizes_lock:
            return self._sizes.pop(path, None)

    def open_append_stream(self, path: str, metadata: dict | None) -> pa.NativeFile:
        """Refused, as S3 refuses appends."""
        return self.native.open_append_stream(path, metadata=metadata)


class RetryingS3FileIO(PyArrowFileIO):
    """pypaimon's S3 file IO over a retrying filesystem; paths as the S3 filesystem takes them."""

    filesystem: pafs.FileSystem

    def __init__(self, path: str, catalog_options: Options, policy: RetryPolicy):
        super().__init__(path, catalog_options)
        self.policy = policy
        settings = S3Settings.from_options(catalog_options.to_map())
        self.handler = RetryingS3Handler(self.filesystem, policy, settings)
        self.filesystem = pafs.PyFileSystem(self.handler)

    def new_output_stream(self, path: str) -> pa.NativeFile:
        """An upload to `path`, without pypaimon's parent "directory" HEAD and LIST: a key
        needs no directory on an object store."""
        return self.filesystem.open_output_stream(self.to_filesystem_path(path))

    def file_exists(self, path: str) -> bool:
        """Whether an object exists, in one HEAD (pypaimon's exists LISTs after a 404, to find
        a "directory")."""
        return self.handler.head(self.to_filesystem_path(path))

    def get_file_size(self, path: str) -> int:
        """The size of an object: from its own upload when this process just wrote it (the
        writer asks right after closing), else a HEAD."""
        size = self.handler.uploaded_size(self.to_filesystem_path(path))
        return size if size is not None else super().get_file_size(path)

    def _create_s3_retry_config(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        """pypaimon's S3 client settings, with the SDK's own retries cut to a quick one (its
        standard strategy would wait up to 20 s per retry, ten times, under each of ours)."""
        config = super()._create_s3_retry_config(*args, **kwargs)
        if "retry_strategy" in config:
            config["retry_strategy"] = pafs.AwsDefaultS3RetryStrategy(max_attempts=SDK_ATTEMPTS)
        return config

    def to_filesystem_path(self, path: str) -> str:
        """bucket/key, as pyarrow's S3 filesystem names an object."""
        parsed = urlparse(path)
        key = re.sub(r"/+", "/", parsed.path).lstrip("/")
        if parsed.scheme and parsed.netloc:
            return f"{parsed.netloc}/{key}" if key else parsed.netloc
        if parsed.scheme:
            return key or "."
        return str(path)


def retrying_file_io(file_io: FileIO, warehouse: str, policy: RetryPolicy) -> FileIO:
    """The catalog's file IO with its S3 requests retried; other stores are returned as is."""
    delegate = getattr(file_io, "_delegate", None)
    if delegate is not None:
        file_io._delegate = retrying_file_io(delegate, warehouse, policy)
        return file_io
    if type(file_io) is not PyArrowFileIO or not isinstance(file_io.filesystem, pafs.S3FileSystem):
        log.warning(
            "pypaimon opened %s with %s, not the pyarrow S3 file IO dagster-paimon wraps: its "
            "reads and uploads get only the S3 SDK's own retries",
            warehouse,
            type(file_io).__name__,
        )
        return file_io
    return RetryingS3FileIO(warehouse, file_io.properties, policy)
