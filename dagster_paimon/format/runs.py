"""Sorted runs of a bucket's files and the key order pypaimon's reader merges them in."""

from __future__ import annotations

from pypaimon.read.interval_partition import IntervalPartition, SortedRun, default_key_comparator

__all__ = [
    "IntervalPartition",
    "SortedRun",
    "default_key_comparator",
]
