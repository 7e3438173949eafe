"""What a DataFrame must look like to be written into a table, and how its batches are cast."""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

from dagster_paimon.errors import InvalidOptionError, SchemaMismatchError
from dagster_paimon.format.schema import TableSchema
from dagster_paimon.format.table import FileStoreTable
from dagster_paimon.io.formats import check_writable_format
from dagster_paimon.io.kv import value_schema
from dagster_paimon.lsm.write.bucket import total_buckets
from dagster_paimon.lsm.write.cast import cast_column
from dagster_paimon.lsm.write.dynamic import check_dynamic_writable
from dagster_paimon.options import (
    BUCKET_KEY,
    CHANGELOG_PRODUCER,
    ROWKIND_FIELD,
    changelog_producer,
)
from dagster_paimon.table import is_dynamic
from dagster_paimon.unsupported import INGEST, OVERWRITE, check_supported_layout

ROW_KIND_COLUMN = "_row_kind"
HIDDEN_PREFIX = "__paimon_"
BUCKET_COLUMN = HIDDEN_PREFIX + "bucket"
ORDINAL_COLUMN = HIDDEN_PREFIX + "ordinal"

_INTEGER_DIGITS = {8: 3, 16: 5, 32: 10, 64: 19}


@dataclass(frozen=True)
class WriteLayout:
    """How input columns map onto a table: its columns, where row kinds come from, hidden columns.

    `prepared` means the input carries the bucket of each row and is distributed so that every
    bucket is in one Spark partition, sorted by key in input order (see `ingest.distribute`).
    """

    target: pa.Schema
    primary_keys: tuple[str, ...]
    row_kind_column: str | None
    prepared: bool


def _is_text(t: pa.DataType) -> bool:
    return pa.types.is_string(t) or pa.types.is_large_string(t)


def _is_bytes(t: pa.DataType) -> bool:
    return pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t)


def compatible(source: pa.DataType, target: pa.DataType) -> bool:
    """Whether every value of `source` converts to `target` without loss (bar time truncation).

    Integers and floats may widen, decimals may gain integer digits and scale, integers may
    become decimals wide enough for them, timestamps may change precision but not time-zone
    semantics. Nested types follow the same rules element by element.
    """
    if source.equals(target) or pa.types.is_null(source):
        return True
    if _is_text(source) or _is_text(target):
        return _is_text(source) and _is_text(target)
    if _is_bytes(source) or _is_bytes(target):
        return _is_bytes(source) and _is_bytes(target) and not pa.types.is_fixed_size_binary(target)
    if pa.types.is_signed_integer(source):
        if pa.types.is_signed_integer(target):
            return source.bit_width <= target.bit_width
        if pa.types.is_decimal(target):
            return _INTEGER_DIGITS[source.bit_width] <= target.precision - target.scale
        return False
    if pa.types.is_float32(source):
        return pa.types.is_float64(target)
    if pa.types.is_decimal(source) and pa.types.is_decimal(target):
        return (
            source.scale <= target.scale
            and source.precision - source.scale <= target.precision - target.scale
        )
    if pa.types.is_timestamp(source) and pa.types.is_timestamp(target):
        return (source.tz is None) == (target.tz is None)
    if pa.types.is_list(source) and pa.types.is_list(target):
        return compatible(source.value_type, target.value_type)
    if pa.types.is_map(source) and pa.types.is_map(target):
        return compatible(source.key_type, target.key_type) and compatible(
            source.item_type, target.item_type
        )
    if pa.types.is_struct(source) and pa.types.is_struct(target):
        if [f.name for f in source] != [f.name for f in target]:
            return False
        return all(compatible(s.type, t.type) for s, t in zip(source, target, strict=True))
    return False


def _hint(source: pa.DataType, target: pa.DataType) -> str:
    """A pointer to the usual fix for the common timestamp mix-up."""
    if pa.types.is_timestamp(source) and pa.types.is_timestamp(target):
        wanted = "timestamp_ntz" if target.tz is None else "timestamp"
        return f" (cast it to {wanted})"
    return ""


def row_kind_source(schema: TableSchema) -> str | None:
    """The table column named by `rowkind.field`, if the table takes row kinds from one."""
    name = schema.options.get(ROWKIND_FIELD)
    return str(name) if name else None


def plan_write_layout(schema: TableSchema, source: pa.Schema) -> WriteLayout:
    """Check input columns against the table; every problem is reported in one error."""
    target = value_schema(schema)
    names = source.names
    problems: list[str] = []
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        problems.append(f"duplicate columns {duplicates}")
    kind_field = row_kind_source(schema)
    hidden = [n for n in names if n.startswith(HIDDEN_PREFIX)]
    prepared = set(hidden) == {BUCKET_COLUMN, ORDINAL_COLUMN}
    if hidden and not prepared:
        problems.append(
            f"columns {hidden} use the reserved prefix {HIDDEN_PREFIX!r} "
            f"(only {BUCKET_COLUMN!r} with {ORDINAL_COLUMN!r}, as ingest.distribute adds them)"
        )
    missing = [n for n in target.names if n not in names]
    if missing:
        problems.append(f"missing columns {missing}")
    extra = [
        n
        for n in names
        if n not in target.names and n != ROW_KIND_COLUMN and not n.startswith(HIDDEN_PREFIX)
    ]
    if extra:
        problems.append(f"columns {extra} are not in the table")
    row_kind = kind_field
    if ROW_KIND_COLUMN in names:
        if kind_field is not None:
            problems.append(
                f"the table takes row kinds from its column {kind_field!r} ('{ROWKIND_FIELD}'); "
                f"drop the {ROW_KIND_COLUMN!r} column"
            )
        elif not _is_text(source.field(ROW_KIND_COLUMN).type):
            have = source.field(ROW_KIND_COLUMN).type
            problems.append(f"{ROW_KIND_COLUMN!r} must be a string column, got {have}")
        row_kind = ROW_KIND_COLUMN
    if kind_field in target.names and not _is_text(target.field(kind_field).type):
        problems.append(f"'{ROWKIND_FIELD}' column {kind_field!r} is not a string column")
    for field in target:
        if field.name not in names:
            continue
        have = source.field(field.name).type
        if not compatible(have, field.type):
            problems.append(
                f"column {field.name!r} is {have}, the table wants {field.type}"
                + _hint(have, field.type)
            )
    if prepared and not pa.types.is_int32(source.field(BUCKET_COLUMN).type):
        problems.append(f"{BUCKET_COLUMN!r} must be an int column")
    if problems:
        raise SchemaMismatchError("cannot write this data into the table: " + "; ".join(problems))
    return WriteLayout(target, tuple(schema.primary_keys), row_kind, prepared)


def to_table_types(batch: pa.RecordBatch, layout: WriteLayout) -> pa.RecordBatch:
    """The table's columns of a batch, in table order and types; NOT NULL columns checked."""
    columns = []
    for field in layout.target:
        column = cast_column(batch.column(field.name), field.type)
        if column.null_count and field.name in layout.primary_keys:
            raise SchemaMismatchError(
                f"primary key column {field.name!r} is null in {column.null_count} rows; "
                "primary keys can never be null"
            )
        if column.null_count and not field.nullable:
            raise SchemaMismatchError(
                f"column {field.name!r} is NOT NULL in the table but null in "
                f"{column.null_count} rows"
            )
        columns.append(column)
    return pa.RecordBatch.from_arrays(columns, schema=layout.target)


def check_append_writable(schema: TableSchema) -> None:
    """A bucketed append table without 'bucket-key' is refused, as Java refuses it
    (SchemaValidation); the modes Java writes differently are refused in unsupported.py."""
    if total_buckets(schema) > 0 and not schema.options.get(BUCKET_KEY):
        raise InvalidOptionError(
            f"a bucketed append table needs the table option '{BUCKET_KEY}' (Java refuses it "
            "without one)"
        )


def check_writable(table: FileStoreTable, *, overwrite: bool) -> None:
    """Refuse tables whose writes need files or a bucket layout we do not produce."""
    if overwrite:
        check_supported_layout(table.table_schema, operation=OVERWRITE)
    check_supported_layout(table.table_schema, operation=INGEST)
    if is_dynamic(table.table_schema):
        check_dynamic_writable(table.table_schema)
    if not table.table_schema.primary_keys:
        check_append_writable(table.table_schema)
    if changelog_producer(table.table_schema.options) == "input":
        raise InvalidOptionError(
            f"table option '{CHANGELOG_PRODUCER}' is 'input': every write would also have to "
            "produce changelog files, which dagster-paimon's ingest does not write"
        )
    check_writable_format(table.table_schema)
