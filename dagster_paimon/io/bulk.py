"""Many small local parquet files read in one call.

Arrow's parquet reader pays a fixed cost per file and per column chunk that dominates a file
of a thousand rows (about 35 us a column chunk, most of a 16-column file's 0.7 ms); polars'
reader takes a list of files and spends about a quarter less. Only what it returns exactly is
read this way: local parquet files of the table's current schema whose columns are all of
plain types, cast back to the table's Arrow types; anything else is read file by file.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl
import pyarrow as pa
import pyarrow.types as t

BULK_ERRORS = (pl.exceptions.PolarsError, OSError)

# Parquet timestamps of at most microsecond precision are INT64 for every writer we read;
# nanoseconds may be INT96, which readers convert differently out of range
_TIMESTAMP_UNITS = ("ms", "us")


def _plain(field: pa.Field) -> bool:
    """Whether polars reads the column into exactly the values Arrow reads (no nesting,
    decimals, times or nanosecond timestamps)."""
    kind = field.type
    if t.is_timestamp(kind):
        return kind.unit in _TIMESTAMP_UNITS
    return (
        t.is_integer(kind)
        or t.is_boolean(kind)
        or t.is_float32(kind)
        or t.is_float64(kind)
        or t.is_string(kind)
        or t.is_binary(kind)
        or t.is_date32(kind)
    )


def _exported(frame: pl.DataFrame) -> pa.Table:
    """The frame as Arrow data: strings as polars holds them (views, no copy: a quarter of the
    cost of converting them to large strings) where polars can (1.1 on), large strings before."""
    compat = getattr(pl, "CompatLevel", None)
    if compat is None:
        return frame.to_arrow()
    return frame.to_arrow(compat_level=compat.newest())


def bulk_readable(schema: pa.Schema) -> bool:
    """Whether files holding exactly these columns can be read in one call."""
    return all(_plain(f) for f in schema)


def read_bulk(paths: Sequence[str], target: pa.Schema) -> pa.Table:
    """The rows of local parquet files, in file order, as one table in `target`'s types (the
    files hold its columns, by name; see bulk_readable). Raises polars' errors (BULK_ERRORS)
    on a file it cannot read: the caller reads them one by one to name it."""
    frame = pl.read_parquet(
        list(paths), columns=target.names, parallel="none", hive_partitioning=False, glob=False
    )
    table = _exported(frame)
    columns = [table.column(f.name).cast(f.type) for f in target]
    return pa.Table.from_arrays(columns, schema=target)
