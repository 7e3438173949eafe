"""Record-level expiry (Java's RecordLevelExpire): compaction drops rows past their time.

With `record-level.expire-time` and `record-level.time-field`, compaction readers drop every row
whose time field is older than now minus the expire time (a null time is kept), before merging;
and a file whose statistics show an expired minimum is rewritten rather than upgraded.
Time fields are INT (seconds), BIGINT (seconds, or milliseconds from 10^12 on) or TIMESTAMP /
TIMESTAMP_LTZ.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dagster_paimon.errors import InvalidOptionError
from dagster_paimon.format.manifest import DataFileMeta
from dagster_paimon.format.schema import TableSchema
from dagster_paimon.options import (
    RECORD_LEVEL_EXPIRE_TIME,
    RECORD_LEVEL_TIME_FIELD,
    duration_ms,
    read_option,
)

MILLIS_FROM = 1_000_000_000_000
INT, BIGINT, TIMESTAMP = "INT", "BIGINT", "TIMESTAMP"

SchemaOf = Callable[[int], TableSchema | None]


def _kind(type_name: str) -> str | None:
    """INT, BIGINT or TIMESTAMP for the types Paimon accepts as a time field, else None."""
    base = type_name.replace(" NOT NULL", "").strip().upper()
    if base == INT:
        return INT
    if base == BIGINT:
        return BIGINT
    if base.startswith(("TIMESTAMP(", "TIMESTAMP_LTZ(")) or base in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        return TIMESTAMP
    return None


def _stat_seconds(value: Any, kind: str) -> int | None:
    """A statistics value of the time field in epoch seconds: an int, a datetime or a pypaimon
    Timestamp as pypaimon's stats row holds it."""
    if value is None:
        return None
    if kind == TIMESTAMP:
        if isinstance(value, datetime):
            return int(value.timestamp() * 1000) // 1000
        return value.get_millisecond() // 1000  # pypaimon Timestamp
    seconds = int(value)
    return seconds // 1000 if kind == BIGINT and seconds >= MILLIS_FROM else seconds


@dataclass(frozen=True)
class RecordLevelExpire:
    """Which rows and files of a table are past `record-level.expire-time`, as of `now_s`."""

    expire_s: int
    field_id: int
    field_name: str
    kind: str
    now_s: int

    @classmethod
    def for_table(cls, schema: TableSchema, now_s: int | None = None) -> RecordLevelExpire | None:
        """None unless record-level.expire-time is set; a bad time field is an option error."""
        options = schema.options
        expire_ms = read_option(options, RECORD_LEVEL_EXPIRE_TIME, duration_ms, None)
        if expire_ms is None:
            return None
        name = options.get(RECORD_LEVEL_TIME_FIELD)
        if not name:
            raise InvalidOptionError(
                f"table option '{RECORD_LEVEL_EXPIRE_TIME}' is set but "
                f"'{RECORD_LEVEL_TIME_FIELD}' is not: record-level expiry needs a time field"
            )
        field = next((f for f in schema.fields if f.name == name), None)
        if field is None:
            raise InvalidOptionError(
                f"table option '{RECORD_LEVEL_TIME_FIELD}' is {name!r}, not a column of the table"
            )
        kind = _kind(str(field.type))
        if kind is None:
            raise InvalidOptionError(
                f"table option '{RECORD_LEVEL_TIME_FIELD}' names {name!r} of type {field.type}; "
                "the time field must be INT, BIGINT or TIMESTAMP"
            )
        now = int(time.time()) if now_s is None else now_s
        return cls(expire_ms // 1000, field.id, name, kind, now)

    def seconds(self, column: pa.Array | pa.ChunkedArray) -> np.ndarray:
        """The time field in epoch seconds (float, NaN where null)."""
        if self.kind == TIMESTAMP:
            millis = pc.cast(column, pa.timestamp("ms", tz=getattr(column.type, "tz", None)))
            values = pc.floor(pc.divide(pc.cast(millis, pa.int64()).cast(pa.float64()), 1000.0))
        else:
            values = pc.cast(column, pa.int64())
            if self.kind == BIGINT:
                big = pc.greater_equal(values, MILLIS_FROM)
                values = pc.if_else(big, pc.divide(values, 1000), values)
            values = values.cast(pa.float64())
        return np.asarray(pc.fill_null(values, np.nan))

    def keep(self, batch: pa.RecordBatch) -> np.ndarray:
        """Rows not expired: a null time, or now <= time + expire (RecordLevelExpire.wrap)."""
        seconds = self.seconds(batch.column(self.field_name))
        return np.isnan(seconds) | (self.now_s <= seconds + self.expire_s)

    def is_expired_file(self, file: DataFileMeta, schema_of: SchemaOf) -> bool:
        """Whether a file's minimum time, by its statistics, is already expired (isExpireFile).

        Files without statistics of the field (pypaimon writes none) are not.
        """
        schema = schema_of(file.schema_id)
        if schema is None or file.value_stats is None:
            return False
        name = next((f.name for f in schema.fields if f.id == self.field_id), None)
        names = (
            [f.name for f in schema.fields]
            if file.value_stats_cols is None
            else list(file.value_stats_cols)
        )
        if name is None or name not in names:
            return False
        minimum = file.value_stats.min_values
        index = names.index(name)
        if minimum is None or index >= len(names):
            return False
        seconds = _stat_seconds(minimum.get_field(index), self.kind)
        return seconds is not None and self.now_s - self.expire_s > seconds
