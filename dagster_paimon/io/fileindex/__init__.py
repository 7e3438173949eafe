"""Paimon's data-file indexes (`file-index.*`): bloom filter, bitmap, bit-sliced index and
range bitmap, built as Java's DataFileIndexWriter builds them for each data file."""

from dagster_paimon.io.fileindex.builder import FileIndexBuilder, FileIndexResult, sidecar_path
from dagster_paimon.io.fileindex.options import FileIndexPlan, file_index_plan

__all__ = [
    "FileIndexBuilder",
    "FileIndexPlan",
    "FileIndexResult",
    "file_index_plan",
    "sidecar_path",
]
