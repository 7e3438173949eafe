"""Paimon's key-value file layout: _KEY_ columns, sequence number, value kind, then the row.

_LEVEL and _POSITION are columns of our own that readers may add (a record's level, its row in
its file) for merges that need them; they are never written.
"""

from __future__ import annotations

import pyarrow as pa

from dagster_paimon.format.schema import PyarrowFieldParser, TableSchema
from dagster_paimon.io.memo import PerObject

KEY_PREFIX = "_KEY_"
SEQUENCE_NUMBER = "_SEQUENCE_NUMBER"
VALUE_KIND = "_VALUE_KIND"

LEVEL = "_LEVEL"
POSITION = "_POSITION"

INSERT, UPDATE_BEFORE, UPDATE_AFTER, DELETE = 0, 1, 2, 3
RETRACT_KINDS = (UPDATE_BEFORE, DELETE)


def values_only(schema: TableSchema) -> bool:
    """Whether the table's data files hold its columns alone (an append table's, Java's
    AppendOnlyWriter) rather than the KV layout: the one place writers and readers ask."""
    return not schema.primary_keys


def trimmed_primary_keys(schema: TableSchema) -> list[str]:
    """Primary keys minus partition keys: what a bucket's files are keyed by."""
    return [k for k in schema.primary_keys if k not in schema.partition_keys]


def key_columns(schema: TableSchema) -> list[str]:
    """The _KEY_ column names of the KV layout, in primary-key order."""
    return [KEY_PREFIX + k for k in trimmed_primary_keys(schema)]


def value_schema(schema: TableSchema) -> pa.Schema:
    """The table's columns as Arrow types, exactly as pypaimon maps them."""
    return _VALUE_SCHEMAS.get(schema)


def kv_schema(schema: TableSchema) -> pa.Schema:
    """The Arrow schema of a KV data file, field for field as pypaimon's writer lays it out."""
    return _KV_SCHEMAS.get(schema)


def _build_kv_schema(schema: TableSchema, _: None) -> pa.Schema:
    """kv_schema, computed."""
    values = value_schema(schema)
    keys = [
        pa.field(KEY_PREFIX + k, values.field(k).type, nullable=values.field(k).nullable)
        for k in trimmed_primary_keys(schema)
    ]
    system = [
        pa.field(SEQUENCE_NUMBER, pa.int64(), nullable=False),
        pa.field(VALUE_KIND, pa.int8(), nullable=False),
    ]
    return pa.schema([*keys, *system, *values])


_VALUE_SCHEMAS: PerObject[TableSchema, pa.Schema] = PerObject(
    lambda schema, _: PyarrowFieldParser.from_paimon_schema(schema.fields)
)
_KV_SCHEMAS: PerObject[TableSchema, pa.Schema] = PerObject(_build_kv_schema)
