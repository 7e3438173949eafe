"""pypaimon's pyarrow S3 file IO with every request retried as storage/retry.py says.

The AWS SDK inside pyarrow retries some failures itself, but not an error answer to a ranged
GET (it reports "Failed to flush response stream", which it deems permanent) and nothing once a
body was cut; one such answer failed a whole compaction. A pyarrow FileSystemHandler around the
S3 filesystem retries each listing, probe, delete, move and every read at its offset, so the
data, manifest and footer reads of pypaimon and ours all get the same policy; uploads are spooled
and sent whole on close, so one that fails at any of its requests is sent again.
"""

from __future__ import annotations

import logging
import re
import tempfile
from collections.abc import Callable
from typing import IO, Any, TypeVar
from urllib.parse import urlparse

import pyarrow as pa
import pyarrow.fs as pafs

from dagster_paimon.format.catalog import Options
from dagster_paimon.format.table import FileIO, PyArrowFileIO
from dagster_paimon.storage.retry import RetryPolicy, retrying

log = logging.getLogger(__name__)

T = TypeVar("T")

# what an upload keeps in memory before it spools to a temporary file, and copies at a time
SPOOL_MEMORY = 16 << 20
UPLOAD_CHUNK = 8 << 20
# pyarrow's AWS SDK retries a failed request itself this often (quickly, unlogged) before our
# policy sees it: our policy, not the SDK's, is the one that waits and gives up
SDK_ATTEMPTS = 2


class RetryingInputFile:
    """A random-access S3 object whose every read is retried at its offset."""

    def __init__(self, native: pa.NativeFile, path: str, policy: RetryPolicy):
        self._native = native
        self._path = path
        self._policy = policy
        self._size = native.size()
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
        """Up to `nbytes` from the position (the rest without), as one ranged GET."""
        remaining = max(self._size - self._position, 0)
        length = remaining if nbytes is None or nbytes < 0 else min(nbytes, remaining)
        if length == 0:
            return pa.py_buffer(b"")
        offset = self._position
        data = retrying(
            "GET", self._path, lambda: self._native.read_at(length, offset), self._policy
        )
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
        """Close the underlying object handle."""
        if not self.closed:
            self._native.close()
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

    def __init__(self, native: pafs.S3FileSystem, policy: RetryPolicy):
        self.native = native
        self.policy = policy

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
        """A random-access reader whose every ranged GET is retried."""
        native = self._retry("HEAD", path, lambda: self.native.open_input_file(path))
        return pa.PythonFile(RetryingInputFile(native, path, self.policy), mode="r")

    def open_output_stream(self, path: str, metadata: dict | None) -> pa.NativeFile:
        """A spooled upload: written locally, uploaded whole on close, the upload retried."""
        return pa.PythonFile(SpooledUpload(self, path, metadata), mode="w")

    def upload(self, path: str, spool: IO[bytes], metadata: dict | None) -> None:
        """Upload a spool's bytes to `path`; a failed attempt starts over (PUT is idempotent)."""

        def attempt() -> None:
            spool.seek(0)
            with self.native.open_output_stream(path, metadata=metadata) as out:
                while chunk := spool.read(UPLOAD_CHUNK):
                    out.write(chunk)

        self._retry("PUT", path, attempt)

    def open_append_stream(self, path: str, metadata: dict | None) -> pa.NativeFile:
        """Refused, as S3 refuses appends."""
        return self.native.open_append_stream(path, metadata=metadata)


class RetryingS3FileIO(PyArrowFileIO):
    """pypaimon's S3 file IO over a retrying filesystem; paths as the S3 filesystem takes them."""

    filesystem: pafs.FileSystem

    def __init__(self, path: str, catalog_options: Options, policy: RetryPolicy):
        super().__init__(path, catalog_options)
        self.policy = policy
        self.filesystem = pafs.PyFileSystem(RetryingS3Handler(self.filesystem, policy))

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
