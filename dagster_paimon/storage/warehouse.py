"""Where a warehouse lives: a local disk or an S3 bucket, behind one small interface."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol
from urllib.parse import urlparse

from dagster_paimon.errors import UnsupportedWarehouseError, WarehouseUnreachableError
from dagster_paimon.format.table import FileIO, FileStoreTable
from dagster_paimon.storage.files import TableFiles
from dagster_paimon.storage.local import LocalFiles, create_local_if_absent, local_path
from dagster_paimon.storage.retry import RetryPolicy
from dagster_paimon.storage.s3 import (
    S3Files,
    S3Settings,
    check_reachable,
    is_s3_uri,
    put_if_absent,
)


class Warehouse(Protocol):
    """What commits and maintenance need from a store, beyond pypaimon's file IO."""

    @property
    def uri(self) -> str:
        """The warehouse's URI, as configured."""
        ...

    def catalog_options(self) -> dict[str, str]:
        """Options pypaimon's catalog needs to reach the store."""
        ...

    def check(self, *, create: bool = False) -> None:
        """Fail with a specific error before anything is written if the store is unusable."""
        ...

    def files(self) -> TableFiles:
        """Listing and deletion as maintenance uses them."""
        ...

    def create_if_absent(self, path: str, content: str) -> bool:
        """Atomically create a file; False if another writer created it (a lost commit race)."""
        ...

    def adapt_file_io(self, file_io: FileIO) -> FileIO:
        """The file IO pypaimon opened for this store, as every request should reach it."""
        ...


@dataclass(frozen=True)
class LocalWarehouse:
    """A directory on a local (or mounted POSIX) filesystem."""

    uri: str

    @property
    def path(self) -> str:
        """The directory, without any file:// scheme."""
        return local_path(self.uri) or self.uri

    def catalog_options(self) -> dict[str, str]:
        """A local catalog needs no options."""
        return {}

    def check(self, *, create: bool = False) -> None:
        """A missing directory is only made when creating a table."""
        if create:
            os.makedirs(self.path, exist_ok=True)
        elif not os.path.isdir(self.path):
            raise WarehouseUnreachableError(f"warehouse {self.uri!r} does not exist")

    def files(self) -> TableFiles:
        """scandir and unlink."""
        return LocalFiles()

    def create_if_absent(self, path: str, content: str) -> bool:
        """A hard link from a temp file: the kernel refuses an existing name."""
        return create_local_if_absent(local_path(path) or path, content)

    def adapt_file_io(self, file_io: FileIO) -> FileIO:
        """A local disk needs no retries."""
        return file_io


@dataclass(frozen=True)
class S3Warehouse:
    """A prefix in an S3 bucket on AWS or any S3-compatible store (MinIO, moto)."""

    uri: str
    settings: S3Settings = field(default_factory=S3Settings)

    def catalog_options(self) -> dict[str, str]:
        """The fs.s3.* options pypaimon's pyarrow file IO reads."""
        return self.settings.catalog_options()

    def check(self, *, create: bool = False) -> None:
        """Endpoint, credentials and bucket are proven by one LIST; buckets are never created."""
        check_reachable(self.uri, self.settings)

    def files(self) -> TableFiles:
        """Paginated listings and batched DeleteObjects."""
        return S3Files(self.settings)

    def create_if_absent(self, path: str, content: str) -> bool:
        """A conditional PUT: no lock service, the store picks the one winner."""
        return put_if_absent(self.settings, path, content)

    def adapt_file_io(self, file_io: FileIO) -> FileIO:
        """pypaimon's pyarrow S3 file IO with every request retried (storage/arrow_s3.py)."""
        from dagster_paimon.storage.arrow_s3 import retrying_file_io

        return retrying_file_io(file_io, self.uri, RetryPolicy.from_env())


def warehouse_for(uri: str, options: Mapping[str, str] | None = None) -> Warehouse:
    """The warehouse behind a URI, configured from pypaimon-style catalog options."""
    if local_path(uri) is not None:
        return LocalWarehouse(uri)
    if is_s3_uri(uri):
        return S3Warehouse(uri, S3Settings.from_options({**(options or {})}))
    raise UnsupportedWarehouseError(
        f"warehouse {uri!r} uses the {urlparse(uri).scheme!r} scheme; dagster-paimon supports "
        "local paths and s3:// (s3a://, s3n://), where a snapshot can be created atomically"
    )


def _file_io_options(file_io: FileIO) -> dict[str, str]:
    """The catalog options a pypaimon FileIO was opened with."""
    properties = getattr(file_io, "properties", None)
    return properties.to_map() if properties is not None else {}


def warehouse_of(file_io: FileIO, path: str) -> Warehouse:
    """The warehouse holding `path`, reached with the same options as the table's file IO."""
    return warehouse_for(path, _file_io_options(file_io))


def table_files(table: FileStoreTable) -> TableFiles:
    """The store behind a table, for listing and deleting its files."""
    return warehouse_of(table.file_io, table.table_path).files()
