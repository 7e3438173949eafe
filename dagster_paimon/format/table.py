"""A table as pypaimon opens it, its file I/O and the paths and writer options derived from it."""

from __future__ import annotations

from typing import Any

from pypaimon.common.external_path_provider import EntropyInjectExternalPathProvider
from pypaimon.common.file_io import FileIO
from pypaimon.filesystem.pyarrow_file_io import PyArrowFileIO
from pypaimon.index.index_file_meta import IndexFileMeta
from pypaimon.table.file_store_table import FileStoreTable
from pypaimon.utils.file_store_path_factory import canonical_data_file_path
from pypaimon.utils.path import resolve_path, to_file_io_path
from pypaimon.write.writer.parquet_writer_options import create_parquet_writer_options

__all__ = [
    "EntropyInjectExternalPathProvider",
    "FileIO",
    "FileStoreTable",
    "PyArrowFileIO",
    "bucket_index_path",
    "canonical_bucket_path",
    "canonical_data_file_path",
    "create_parquet_writer_options",
    "data_root",
    "index_root",
    "new_bucket_index_path",
    "resolve_path",
    "statistics_root",
    "to_file_io_path",
]


def data_root(table: FileStoreTable) -> str:
    """The directory data files live under (the table's root unless data-file.path-directory)."""
    return table.path_factory().data_file_path().rstrip("/")


def index_root(table: FileStoreTable) -> str:
    """The directory of index files and index manifests' files."""
    return table.path_factory().index_path()


def statistics_root(table: FileStoreTable) -> str:
    """The directory of statistics files."""
    return table.path_factory().statistics_path().rstrip("/")


def bucket_index_path(
    table: FileStoreTable, values: tuple[Any, ...], bucket: int, index: IndexFileMeta
) -> str:
    """Where an index file lives: the index directory, or its bucket's directory with
    index-file-in-data-file-dir, or its external path."""
    return table.path_factory().bucket_index_path(tuple(values), bucket, index, table.file_io)


def new_bucket_index_path(
    table: FileStoreTable, values: tuple[Any, ...], bucket: int, name: str
) -> tuple[str, bool]:
    """Where a new index file `name` of a bucket goes, and whether that is an external path."""
    return table.path_factory().new_bucket_index_path(tuple(values), bucket, name)


def canonical_bucket_path(table: FileStoreTable, values: tuple[Any, ...], bucket: int) -> str:
    """A bucket's directory relative to a root, partition values spelled as Java spells them
    in paths (escaped; DATE and TIMESTAMP in their canonical text)."""
    return table.path_factory().relative_bucket_path(
        tuple(values), bucket, canonical_partition=True
    )
