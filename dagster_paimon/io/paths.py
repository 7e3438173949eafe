"""Where data files live, and removing files an operation wrote but will not commit."""

from __future__ import annotations

from collections.abc import Iterable

from dagster_paimon.format.manifest import DataFileMeta
from dagster_paimon.format.table import FileStoreTable, canonical_data_file_path, to_file_io_path
from dagster_paimon.io.memo import PerObject
from dagster_paimon.partition import Partition

COMPRESSION_EXTENSIONS = {
    "none": None,
    "gzip": "gz",
    "bzip2": "bz2",
    "deflate": "deflate",
    "snappy": "snappy",
    "lz4": "lz4",
    "zstd": "zst",
}
"""File extensions of Paimon's HadoopCompressionType; other compressions name themselves."""


def _bucket_directory(table: FileStoreTable, where: tuple[tuple, int]) -> str:
    """Java's escaped partition/bucket directory (the physical path where pypaimon would
    decode an escape), without a trailing slash."""
    values, bucket = where
    return canonical_data_file_path(table, values, bucket, "").rstrip("/")


_BUCKET_DIRECTORIES: PerObject[FileStoreTable, str] = PerObject(_bucket_directory)


def bucket_file_path(table: FileStoreTable, partition: Partition, bucket: int, name: str) -> str:
    """A file in Java's escaped partition/bucket directory."""
    return f"{_BUCKET_DIRECTORIES.get(table, (partition.values, bucket))}/{name}"


def data_file_path(
    table: FileStoreTable, partition: Partition, bucket: int, meta: DataFileMeta
) -> str:
    """Where a data file lives: its external path, else its bucket directory.

    Java records a local external path as `file:/...` with escaped partition values (`%3A`)
    literal; pypaimon's file IO would decode them, so it is read at its physical path.
    """
    if meta.external_path:
        return to_file_io_path(meta.external_path)
    return bucket_file_path(table, partition, bucket, meta.file_name)


def delete_data_files(
    table: FileStoreTable, partition: Partition, bucket: int, files: Iterable[DataFileMeta]
) -> None:
    """Best-effort removal of files written by an attempt that will not be committed."""
    for meta in files:
        table.file_io.delete_quietly(data_file_path(table, partition, bucket, meta))


def file_extension(fmt: str, compression: str, *, include_compression: bool) -> str:
    """A data file's extension as Java's DataFilePathFactory makes it: `.zst.parquet` under
    `file.suffix.include.compression`, else `.parquet`."""
    if include_compression and compression:
        codec = COMPRESSION_EXTENSIONS.get(compression.lower(), compression)
        if codec is not None:
            return f".{codec}.{fmt}"
    return f".{fmt}"
