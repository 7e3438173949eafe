"""Dynamic-bucket HASH index files: every key hash one bucket holds (Java's HashIndexFile).

A file is the bucket's whole set of trimmed-primary-key hashes as big-endian int32 values,
rewritten whole when a write adds keys (DynamicBucketIndexMaintainer).
"""

from __future__ import annotations

import numpy as np

from dagster_paimon.errors import CorruptMetadataError
from dagster_paimon.format.manifest import IndexFileMeta
from dagster_paimon.format.table import FileStoreTable
from dagster_paimon.io.index import HASH_INDEX, index_path, write_index_file
from dagster_paimon.partition import Partition

_WIRE = np.dtype(">i4")


def read_hashes(
    table: FileStoreTable, partition: Partition, bucket: int, index: IndexFileMeta
) -> np.ndarray:
    """The key hashes of a bucket's HASH index file."""
    path = index_path(table, partition, bucket, index)
    with table.file_io.new_input_stream(path) as stream:
        data = stream.read()
    if len(data) % _WIRE.itemsize:
        raise CorruptMetadataError(
            f"HASH index {path} has {len(data)} bytes, not a whole number of int32 hashes"
        )
    return np.frombuffer(data, dtype=_WIRE).astype(np.int32)


def write_hashes(
    table: FileStoreTable, partition: Partition, bucket: int, hashes: np.ndarray
) -> IndexFileMeta:
    """A new HASH index file holding `hashes` (distinct)."""
    data = np.asarray(hashes, dtype=np.int32).astype(_WIRE).tobytes()
    return write_index_file(table, partition, bucket, HASH_INDEX, data, len(hashes))
