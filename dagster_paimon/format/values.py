"""Memory sizes, durations, timestamps and JSON as Paimon writes them; light for the CLI's start."""

from __future__ import annotations

from pypaimon.common.json_util import JSON
from pypaimon.common.memory_size import MemorySize
from pypaimon.common.time_utils import (
    duration_to_json_seconds,
    local_datetime_to_json_array,
    parse_duration,
)
from pypaimon.data.timestamp import Timestamp

__all__ = [
    "JSON",
    "MemorySize",
    "Timestamp",
    "duration_to_json_seconds",
    "local_datetime_to_json_array",
    "parse_duration",
]
