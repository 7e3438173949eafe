"""What append tables' compaction and health read from table options, defaults as in
CoreOptions.java: one definition of a small file for both."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from dagster_paimon.options import (
    DELETE_RATIO_THRESHOLD,
    DELETION_VECTORS,
    FILE_NUM_LIMIT,
    FORCE_REWRITE_ALL_FILES,
    MIN_FILE_NUM,
    SMALL_FILE_RATIO,
    SPLIT_OPEN_FILE_COST,
    TARGET_FILE_SIZE,
    at_least,
    bucket,
    flag,
    memory_bytes,
    ratio,
    read_option,
)

# CoreOptions.targetFileSize(hasPrimaryKey=false) and COMPACTION_SMALL_FILE_RATIO's default
APPEND_TARGET_FILE_SIZE = 256 * 1024 * 1024
DEFAULT_SMALL_FILE_RATIO = 0.7
OPEN_FILE_COST = 4 * 1024 * 1024
UNAWARE_BUCKET = -1


@dataclass(frozen=True)
class AppendOptions:
    """What append compaction reads from table options, defaults as in CoreOptions.java."""

    target_file_size: int = APPEND_TARGET_FILE_SIZE
    small_file_ratio: float = DEFAULT_SMALL_FILE_RATIO
    min_file_num: int = 5
    file_num_limit: int = 100_000
    open_file_cost: int = OPEN_FILE_COST
    force_rewrite_all_files: bool = False
    deletion_vectors: bool = False
    delete_ratio_threshold: float = 0.2
    unaware: bool = False

    @classmethod
    def from_table_options(cls, options: Mapping[str, str]) -> AppendOptions:
        """Parse table options; bad values raise InvalidOptionError."""
        return cls(
            target_file_size=read_option(
                options, TARGET_FILE_SIZE, memory_bytes, APPEND_TARGET_FILE_SIZE
            ),
            small_file_ratio=read_option(
                options, SMALL_FILE_RATIO, ratio, DEFAULT_SMALL_FILE_RATIO
            ),
            min_file_num=read_option(options, MIN_FILE_NUM, at_least(1), 5),
            file_num_limit=read_option(options, FILE_NUM_LIMIT, at_least(1), 100_000),
            open_file_cost=read_option(options, SPLIT_OPEN_FILE_COST, memory_bytes, OPEN_FILE_COST),
            force_rewrite_all_files=flag(options, FORCE_REWRITE_ALL_FILES),
            deletion_vectors=flag(options, DELETION_VECTORS),
            delete_ratio_threshold=read_option(options, DELETE_RATIO_THRESHOLD, ratio, 0.2),
            unaware=bucket(options) == UNAWARE_BUCKET,
        )

    @property
    def compaction_file_size(self) -> int:
        """Files below this size are small (CoreOptions.compactionFileSize)."""
        return int(self.target_file_size * self.small_file_ratio)
