"""A table schema and its data types, and their mapping to Arrow, as pypaimon defines them."""

from __future__ import annotations

from pypaimon.schema.data_types import (
    ArrayType,
    AtomicType,
    DataField,
    DataType,
    MapType,
    MultisetType,
    PyarrowFieldParser,
    RowType,
    VectorType,
)
from pypaimon.schema.table_schema import TableSchema

__all__ = [
    "ArrayType",
    "AtomicType",
    "DataField",
    "DataType",
    "MapType",
    "MultisetType",
    "PyarrowFieldParser",
    "RowType",
    "TableSchema",
    "VectorType",
]
