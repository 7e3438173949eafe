"""Key and value statistics of the data files we write, as Paimon's Java writer records them.

Ported from apache/paimon release-2.0.0 (not copied): `StatsCollectorFactories` picks a mode per
column of the file's row type, `SimpleColStatsCollector.from` parses it (none, counts,
truncate(N), full), `KeyValueFileWriterFactory.statsProducer` picks the table mode per level
(`metadata.stats-mode.per.level`, 1.1) and for changelog files (`changelog-file.stats-mode`,
1.1), the format's stats extractor (`ParquetSimpleStatsExtractor`, `OrcSimpleStatsExtractor`; the
collector for Avro) decides which types have min/max at all, `TruncateSimpleColStatsCollector`
truncates the final min/max, and `KeyValueDataFileWriter.result` stores key stats in full and
value stats densely (`metadata.stats-dense-store`, 1.0) through `SimpleStatsConverter`.

Where Java versions differ we write what release-2.0.0 writes, with one exception (dense store):
- Key columns (`_KEY_*`) and, in thin mode, the value columns of the keys are `truncate(128)`
  unless `fields.<name>.stats-mode` says otherwise (since 1.0.0); Java 0.9 and the 1.0 snapshots
  before October 2024 gave them the table's mode. Both are valid bounds for every reader.
- Dense store (1.0.0) leaves columns without stats out of the value stats and names the rest in
  `_VALUE_STATS_COLS`; Java 0.9 readers ignore that field and would read the dense row as if it
  held every column. We store densely only when the table sets `metadata.stats-dense-store`
  explicitly to true; otherwise every column is stored (those without stats as null min, max
  and null count, as Java with dense store off writes them), which every reader decodes to the
  same statistics. When every column has stats both layouts are the same (cols null).
- BINARY min/max are recorded by Parquet and Avro since 2.0.0 (null before).
- A truncated string max whose last code point would become a UTF-16 surrogate (after U+D7FF)
  is written by Java as '?', which is below the value it bounds; we step to U+E000 instead.
- Floating point NaN: Parquet and ORC stats of a column holding NaN depend on row order; we
  record no min/max there (a valid "unknown"). Avro compares as Java's `Double.compareTo`.
- TIMESTAMP(7..9) kept by ORC or Avro: pypaimon stores stats at microseconds, so the max is
  rounded up to the next microsecond to stay an upper bound.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from dagster_paimon.errors import InvalidArgumentError
from dagster_paimon.format.manifest import GenericRow, SimpleStats
from dagster_paimon.format.schema import (
    ArrayType,
    AtomicType,
    DataField,
    DataType,
    MapType,
    MultisetType,
    RowType,
    TableSchema,
    VectorType,
)
from dagster_paimon.options import (
    CHANGELOG_FILE_STATS_MODE,
    FIELDS_PREFIX,
    METADATA_STATS_DENSE_STORE,
    METADATA_STATS_KEEP_FIRST_N_COLUMNS,
    METADATA_STATS_MODE,
    METADATA_STATS_MODE_PER_LEVEL,
    STATS_MODE_SUFFIX,
    boolean,
    per_level,
    read_option,
)

NONE, COUNTS, TRUNCATE, FULL = "none", "counts", "truncate", "full"
SYSTEM_FIELDS = frozenset({"_SEQUENCE_NUMBER", "_VALUE_KIND", "_LEVEL", "rowkind", "_ROW_ID"})
KEY_PREFIX = "_KEY_"
SYSTEM_TRUNCATE = 128
ORC_MAX_STRING_STATS = 1024  # orc-core StringStatisticsImpl.MAX_BYTES_RECORDED
MAX_CODE_POINT = 0x10FFFF
SURROGATES = range(0xD800, 0xE000)
_TRUNCATE = re.compile(r"TRUNCATE\((\d+)\)")

# what a format's stats give for a type: min/max and null count, only the null count, nothing
MINMAX, NULLS, ABSENT = "minmax", "nulls", "absent"


@dataclass(frozen=True)
class StatsMode:
    """One column's `stats-mode`: none, counts, truncate(length) or full."""

    kind: str
    length: int = 0

    def __str__(self) -> str:
        return f"truncate({self.length})" if self.kind == TRUNCATE else self.kind


def stats_mode(text: str) -> StatsMode:
    """Parse a mode as `SimpleColStatsCollector.from` does (case-insensitive, length > 0)."""
    upper = text.upper()
    if upper in ("NONE", "COUNTS", "FULL"):
        return StatsMode(upper.lower())
    match = _TRUNCATE.fullmatch(upper)
    if match is None:
        raise InvalidArgumentError("expected none, counts, full or truncate(N)")
    length = int(match.group(1))
    if length <= 0:
        raise InvalidArgumentError("truncate length should be larger than zero")
    return StatsMode(TRUNCATE, length)


DEFAULT_MODE = StatsMode(TRUNCATE, 16)
SYSTEM_MODE = StatsMode(TRUNCATE, SYSTEM_TRUNCATE)


def level_modes(text: str) -> dict[int, StatsMode]:
    """`metadata.stats-mode.per.level`: a mode per level ('0:none,1:full')."""
    return {level: stats_mode(mode) for level, mode in per_level(text).items()}


def table_mode(options: Mapping[str, str], level: int, *, changelog: bool) -> StatsMode:
    """The mode of a file at `level`: changelog mode, then per-level mode, then the table's."""
    if changelog and options.get(CHANGELOG_FILE_STATS_MODE) is not None:
        return read_option(options, CHANGELOG_FILE_STATS_MODE, stats_mode, DEFAULT_MODE)
    per_level = read_option(options, METADATA_STATS_MODE_PER_LEVEL, level_modes, {})
    if level in per_level:
        return per_level[level]
    return read_option(options, METADATA_STATS_MODE, stats_mode, DEFAULT_MODE)


def is_system_field(name: str) -> bool:
    """SpecialFields.isSystemField: key columns and Paimon's system columns."""
    return name.startswith(KEY_PREFIX) or name in SYSTEM_FIELDS


def column_modes(
    names: Sequence[str],
    options: Mapping[str, str],
    mode: StatsMode,
    *,
    avro: bool,
    thin_keys: frozenset[str] = frozenset(),
) -> list[StatsMode]:
    """The mode of each column of a file's row type (StatsCollectorFactories).

    A `fields.<name>.stats-mode` wins; Parquet and ORC give system columns (and in thin mode the
    key's value columns) truncate(128) and do not count them toward
    `metadata.stats-keep-first-n-columns`; Avro counts every column and has no exception.
    """
    keep_first = read_option(options, METADATA_STATS_KEEP_FIRST_N_COLUMNS, int, -1)
    modes: list[StatsMode] = []
    counted = 0
    for name in names:
        key = f"{FIELDS_PREFIX}{name}{STATS_MODE_SUFFIX}"
        if options.get(key) is not None:
            modes.append(read_option(options, key, stats_mode, mode))
            counted += 1
        elif not avro and (is_system_field(name) or name in thin_keys):
            modes.append(SYSTEM_MODE)
        else:
            modes.append(StatsMode(NONE) if 0 <= keep_first <= counted else mode)
            counted += 1
    return modes


def _timestamp_precision(type_name: str) -> int:
    """The precision of a TIMESTAMP / TIMESTAMP_LTZ type name (6 when not given)."""
    match = re.search(r"\((\d+)\)", type_name)
    return int(match.group(1)) if match else 6


def bounds(file_format: str, data_type: DataType) -> str:
    """What a format's stats give for a type (Parquet/ORC extractors, Avro's collector)."""
    if isinstance(data_type, ArrayType | MapType | MultisetType | RowType | VectorType):
        # Parquet's stats are keyed by leaf path, so a nested column finds none at all
        return ABSENT if file_format == "parquet" else NULLS
    if not isinstance(data_type, AtomicType):
        return NULLS
    name = data_type.type.upper()
    root = name.split("(")[0].split()[0]
    if root in ("BINARY", "VARBINARY", "BYTES"):
        return NULLS if file_format == "orc" else MINMAX
    if root in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        precise = file_format == "parquet" and _timestamp_precision(name) > 6
        return NULLS if precise else MINMAX
    if root in ("VARIANT", "BLOB"):
        return NULLS
    return MINMAX


def truncate_min(value: object, length: int) -> object:
    """A lower bound of at most `length` characters (strings) or bytes (binaries)."""
    if isinstance(value, str | bytes):
        return value[:length]
    return value


def truncate_max(value: object, length: int) -> object | None:
    """An upper bound of at most `length` characters or bytes: the prefix with its last code
    point (byte) incremented, dropping what cannot be; None when nothing can."""
    if isinstance(value, str):
        if len(value) <= length:
            return value
        for i in range(length - 1, -1, -1):
            following = ord(value[i]) + 1
            if following in SURROGATES:
                following = SURROGATES.stop
            if following <= MAX_CODE_POINT:
                return value[:i] + chr(following)
        return None
    if isinstance(value, bytes):
        if len(value) <= length:
            return value
        for i in range(length - 1, -1, -1):
            if value[i] != 0xFF:
                return value[:i] + bytes([value[i] + 1])
        return None
    return value


@dataclass(frozen=True)
class ColumnStats:
    """One column's statistics as recorded: None where Java records null."""

    min: object = None
    max: object = None
    null_count: int | None = None

    def is_none(self) -> bool:
        """SimpleColStats.isNone: nothing at all (dense store leaves such columns out)."""
        return self.min is None and self.max is None and self.null_count is None


NO_STATS = ColumnStats()


def convert(stats: ColumnStats, mode: StatsMode) -> ColumnStats:
    """The collector's `convert` of a format's stats: what the mode keeps of them."""
    if mode.kind == NONE:
        return NO_STATS
    if mode.kind == COUNTS:
        return ColumnStats(None, None, stats.null_count)
    if mode.kind == TRUNCATE:
        high = truncate_max(stats.max, mode.length)
        if high is None:
            return ColumnStats(None, None, stats.null_count)
        return ColumnStats(truncate_min(stats.min, mode.length), high, stats.null_count)
    return stats


class ColumnCollector:
    """Running null count and min/max of one column, batch by batch (vectorized)."""

    def __init__(self, arrow_type: pa.DataType, mode: StatsMode, kind: str, file_format: str):
        self.mode, self.kind, self.format = mode, kind, file_format
        self.nulls = 0
        # whatever pyarrow's as_py() gives for the column's type, compared with < and >
        self.low: Any = None
        self.high: Any = None
        self.floating = pa.types.is_floating(arrow_type)
        self.nan = False
        self.only_nan = True
        self.nanos = pa.types.is_timestamp(arrow_type) and arrow_type.unit == "ns"
        self.arrow_type = arrow_type
        self.wanted = mode.kind != NONE and kind != ABSENT
        self.bounded = mode.kind in (TRUNCATE, FULL) and kind == MINMAX

    def update(self, column: pa.Array | pa.ChunkedArray) -> None:
        """Fold one batch's column in."""
        if not self.wanted:
            return
        self.nulls += column.null_count
        if not self.bounded or column.null_count == len(column):
            return
        if self.floating:
            nans = pc.sum(pc.is_nan(column)).as_py() or 0
            self.nan = self.nan or nans > 0
            if nans == len(column) - column.null_count:
                return
            self.only_nan = False
        if self.nanos:
            column = pc.cast(column, pa.int64())
        extremes = pc.min_max(column)
        low, high = extremes["min"].as_py(), extremes["max"].as_py()
        if self.low is None or low < self.low:
            self.low = low
        if self.high is None or high > self.high:
            self.high = high

    def result(self) -> ColumnStats:
        """What the format's stats hold, converted by the column's mode."""
        if not self.wanted:
            return NO_STATS
        low, high = self._bounds()
        return convert(ColumnStats(low, high, self.nulls), self.mode)

    def _bounds(self) -> tuple[object, object]:
        """The min/max the format's stats report, before the mode's conversion."""
        if not self.bounded:
            return None, None
        if self.floating and self.nan:
            if self.format != "avro":
                return None, None
            nan = math.nan  # Double.compareTo: NaN above everything
            return (nan if self.only_nan else self.low), nan
        low, high = self.low, self.high
        if low is None:
            return None, None
        if self.nanos:
            low, high = self._micros(low, floor=True), self._micros(high, floor=False)
        if self.format == "orc" and isinstance(low, str):
            low = None if len(low.encode()) > ORC_MAX_STRING_STATS else low
            high = None if len(high.encode()) > ORC_MAX_STRING_STATS else high
        return low, high

    def _micros(self, nanos: int, *, floor: bool) -> object:
        """A nanosecond timestamp as the microsecond value pypaimon stores, still a bound."""
        micros = nanos // 1000 if floor else -(-nanos // 1000)
        tz = self.arrow_type.tz
        return pa.scalar(micros, pa.timestamp("us", tz)).as_py()


@dataclass(frozen=True)
class StatsLayout:
    """Which statistics a writer's files keep: per column of the file, and how they're stored."""

    key_names: list[str]
    key_fields: list[DataField]
    value_names: list[str]
    value_fields: list[DataField]
    key_modes: list[StatsMode]
    value_modes: list[StatsMode]
    key_kinds: list[str]
    value_kinds: list[str]
    thin: bool
    dense: bool
    file_format: str

    @classmethod
    def of(
        cls,
        schema: TableSchema,
        key_fields: Sequence[DataField],
        *,
        level: int,
        file_format: str,
        changelog: bool = False,
        thin: bool = False,
        append: bool = False,
    ) -> StatsLayout:
        """The layout of files written at `level` (changelog files: `changelog`); an append
        table's files hold its columns alone (`append`), no system columns."""
        options = schema.options
        mode = table_mode(options, level, changelog=changelog)
        avro = file_format == "avro"
        key_names = [KEY_PREFIX + f.name for f in key_fields]
        value_fields = list(schema.fields)
        value_names = [f.name for f in value_fields]
        system = [] if append else ["_SEQUENCE_NUMBER", "_VALUE_KIND"]
        thin_keys = frozenset(f.name for f in key_fields) if thin else frozenset()
        names = [*([] if thin else key_names), *system, *value_names]
        modes = column_modes(names, options, mode, avro=avro, thin_keys=thin_keys)
        by_name = dict(zip(names, modes, strict=True))
        dense = options.get(METADATA_STATS_DENSE_STORE) is not None and read_option(
            options, METADATA_STATS_DENSE_STORE, boolean, True
        )
        return cls(
            key_names=key_names,
            key_fields=list(key_fields),
            value_names=value_names,
            value_fields=value_fields,
            key_modes=[by_name[n] for n in key_names] if not thin else [],
            value_modes=[by_name[n] for n in value_names],
            key_kinds=[bounds(file_format, f.type) for f in key_fields],
            value_kinds=[bounds(file_format, f.type) for f in value_fields],
            thin=thin,
            dense=dense,
            file_format=file_format,
        )

    def collector(self, schema: pa.Schema) -> FileStats:
        """A fresh collector for one file whose batches have `schema` (the KV layout)."""
        return FileStats(self, schema)


class FileStats:
    """The statistics of one data file being written."""

    def __init__(self, layout: StatsLayout, schema: pa.Schema):
        self.layout = layout

        def collectors(
            names: Sequence[str], modes: Sequence[StatsMode], kinds: Sequence[str]
        ) -> list[ColumnCollector]:
            return [
                ColumnCollector(schema.field(n).type, m, k, layout.file_format)
                for n, m, k in zip(names, modes, kinds, strict=True)
            ]

        self.keys = (
            [] if layout.thin else collectors(layout.key_names, layout.key_modes, layout.key_kinds)
        )
        self.values = collectors(layout.value_names, layout.value_modes, layout.value_kinds)

    def update(self, batch: pa.RecordBatch) -> None:
        """Fold one batch (KV layout, keys included) into every column's statistics."""
        if not self.layout.thin:
            for name, column in zip(self.layout.key_names, self.keys, strict=True):
                column.update(batch.column(name))
        for name, column in zip(self.layout.value_names, self.values, strict=True):
            column.update(batch.column(name))

    def key_stats(self) -> SimpleStats:
        """Key statistics, every key column stored (SimpleStatsConverter.toBinaryAllMode)."""
        if self.layout.thin:
            index = {n: i for i, n in enumerate(self.layout.value_names)}
            stats = [self.values[index[f.name]].result() for f in self.layout.key_fields]
        else:
            stats = [c.result() for c in self.keys]
        return _simple_stats(stats, self.layout.key_fields)

    def value_stats(self) -> tuple[SimpleStats, list[str] | None]:
        """Value statistics and `_VALUE_STATS_COLS` (None: every column, in order)."""
        stats = [c.result() for c in self.values]
        fields = self.layout.value_fields
        if self.layout.dense:
            kept = [i for i, s in enumerate(stats) if not s.is_none()]
            if len(kept) < len(stats):
                return (
                    _simple_stats([stats[i] for i in kept], [fields[i] for i in kept]),
                    [fields[i].name for i in kept],
                )
        return _simple_stats(stats, fields), None


def _simple_stats(stats: Sequence[ColumnStats], fields: Sequence[DataField]) -> SimpleStats:
    """Min and max rows over the fields, and the null counts (None where not recorded)."""
    return SimpleStats(
        GenericRow([s.min for s in stats], list(fields)),
        GenericRow([s.max for s in stats], list(fields)),
        [s.null_count for s in stats],
    )
