"""A table as pypaimon opens it, its file I/O and the paths and writer options derived from it."""

from __future__ import annotations

from pypaimon.common.external_path_provider import EntropyInjectExternalPathProvider
from pypaimon.common.file_io import FileIO
from pypaimon.filesystem.pyarrow_file_io import PyArrowFileIO
from pypaimon.table.file_store_table import FileStoreTable
from pypaimon.utils.file_store_path_factory import canonical_data_file_path
from pypaimon.utils.path import resolve_path, to_file_io_path
from pypaimon.write.writer.parquet_writer_options import create_parquet_writer_options

__all__ = [
    "EntropyInjectExternalPathProvider",
    "FileIO",
    "FileStoreTable",
    "PyArrowFileIO",
    "canonical_data_file_path",
    "create_parquet_writer_options",
    "resolve_path",
    "to_file_io_path",
]
