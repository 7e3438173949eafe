"""Avro schemas: the one Paimon's AvroSchemaConverter gives Arrow fields, and back."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pyarrow as pa

from dagster_paimon.errors import SchemaMismatchError

AVRO_NAMESPACE = "org.apache.paimon.avro.generated"
AVRO_RECORD = "record"


def avro_schema(schema: pa.Schema) -> dict:
    """The Avro schema Paimon's AvroSchemaConverter gives a KV file of these Arrow fields."""
    return {
        "type": "record",
        "name": AVRO_RECORD,
        "namespace": AVRO_NAMESPACE,
        "fields": _avro_fields(schema, AVRO_RECORD),
    }


def _avro_fields(fields: Iterable[pa.Field], row: str) -> list:
    """Record fields: nullable ones as ['null', T] with a null default, as Java builds them."""
    out = []
    for f in fields:
        avro = _avro_type(f.type, f"{row}_{f.name}")
        if f.nullable:
            out.append({"name": f.name, "type": ["null", avro], "default": None})
        else:
            out.append({"name": f.name, "type": avro})
    return out


def _maybe_null(avro: Any, nullable: bool) -> Any:
    """A nullable element or value type is a union with null first."""
    return ["null", avro] if nullable else avro


def _avro_type(t: pa.DataType, row: str) -> Any:
    """The Avro type of an Arrow type as pypaimon maps Paimon's; `row` names nested records."""
    if pa.types.is_boolean(t):
        return "boolean"
    if pa.types.is_signed_integer(t):
        return "long" if t.bit_width == 64 else "int"
    if pa.types.is_float32(t) or pa.types.is_float64(t):
        return "float" if pa.types.is_float32(t) else "double"
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "string"
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return "bytes"
    if pa.types.is_decimal128(t):
        return {
            "type": "bytes",
            "logicalType": "decimal",
            "precision": t.precision,
            "scale": t.scale,
        }
    if pa.types.is_date32(t):
        return {"type": "int", "logicalType": "date"}
    if pa.types.is_time32(t) and t.unit == "ms":
        return {"type": "int", "logicalType": "time-millis"}
    if pa.types.is_timestamp(t) and t.unit != "ns":
        unit = "millis" if t.unit in ("s", "ms") else "micros"
        local = "local-" if t.tz is not None else ""
        return {"type": "long", "logicalType": f"{local}timestamp-{unit}"}
    if pa.types.is_map(t):
        return _avro_map(t, row)
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        items = _avro_type(t.value_type, row)
        return {"type": "array", "items": _maybe_null(items, t.value_field.nullable)}
    if pa.types.is_struct(t):
        return {"type": "record", "name": row, "fields": _avro_fields(t, row)}
    raise SchemaMismatchError(f"Arrow type {t} has no Avro encoding in Paimon's format")


def _avro_map(t: pa.MapType, row: str) -> dict:
    """A string-keyed map is an Avro map; any other an array of key/value records."""
    value = _maybe_null(_avro_type(t.item_type, row), t.item_field.nullable)
    if pa.types.is_string(t.key_type) or pa.types.is_large_string(t.key_type):
        return {"type": "map", "values": value}
    value_field = {"name": "value", "type": _avro_type(t.item_type, f"{row}_value")}
    if t.item_field.nullable:
        value_field = {**value_field, "type": ["null", value_field["type"]], "default": None}
    entry = {
        "type": "record",
        "name": row,
        "fields": [{"name": "key", "type": _avro_type(t.key_type, f"{row}_key")}, value_field],
    }
    return {"type": "array", "items": entry, "logicalType": "map"}


def record_of(schema: Any) -> dict:
    """The row record of a file schema (Paimon 0.9 wrapped it in a ['null', record] union)."""
    if isinstance(schema, list):
        branches = [s for s in schema if s != "null"]
        if len(branches) == 1:
            return record_of(branches[0])
    if isinstance(schema, dict) and schema.get("type") == "record":
        return schema
    raise SchemaMismatchError(f"Avro data file schema is not a record: {schema}")


def _branch(avro: Any) -> tuple[Any, bool]:
    """A type without its null branch, and whether there was one."""
    if isinstance(avro, list):
        rest = [s for s in avro if s != "null"]
        if len(rest) != 1:
            raise SchemaMismatchError(f"Avro union {avro} is not ['null', T]")
        return rest[0], len(rest) != len(avro)
    return avro, False


PRIMITIVE_ARROW = {
    "boolean": pa.bool_(),
    "int": pa.int32(),
    "long": pa.int64(),
    "float": pa.float32(),
    "double": pa.float64(),
    "string": pa.string(),
    "bytes": pa.binary(),
}
LOGICAL_ARROW = {
    "date": pa.date32(),
    "time-millis": pa.time32("ms"),
    "timestamp-millis": pa.timestamp("ms"),
    "timestamp-micros": pa.timestamp("us"),
    "local-timestamp-millis": pa.timestamp("ms", tz="UTC"),
    "local-timestamp-micros": pa.timestamp("us", tz="UTC"),
}


def arrow_field(name: str, avro: Any) -> pa.Field:
    """The Arrow field an Avro field reads into (nullable when a union with null)."""
    inner, nullable = _branch(avro)
    return pa.field(name, _arrow_type(inner), nullable=nullable)


def _arrow_type(avro: Any) -> pa.DataType:
    """The Arrow type of an Avro type as Paimon writes them (pypaimon's choices of Arrow type)."""
    if isinstance(avro, str):
        if avro in PRIMITIVE_ARROW:
            return PRIMITIVE_ARROW[avro]
        raise SchemaMismatchError(f"Avro type {avro!r} is not one Paimon writes")
    logical = avro.get("logicalType")
    if logical == "decimal":
        return pa.decimal128(avro["precision"], avro.get("scale", 0))
    if logical in LOGICAL_ARROW:
        return LOGICAL_ARROW[logical]
    kind = avro["type"]
    if kind == "record":
        return pa.struct([arrow_field(f["name"], f["type"]) for f in avro["fields"]])
    if kind == "map":
        value = arrow_field("value", avro["values"])
        return pa.map_(pa.field("key", pa.string(), nullable=False), value)
    if kind == "array" and logical == "map":
        key, value = avro["items"]["fields"]
        key_type = _arrow_type(_branch(key["type"])[0])
        return pa.map_(
            pa.field("key", key_type, nullable=False), arrow_field("value", value["type"])
        )
    if kind == "array":
        return pa.list_(arrow_field("item", avro["items"]))
    if kind in PRIMITIVE_ARROW:
        return PRIMITIVE_ARROW[kind]
    raise SchemaMismatchError(f"Avro type {avro} is not one Paimon writes")


def raw_columns(record: dict) -> dict:
    """The record with top-level logical types dropped: they decode as plain ints and bytes,
    converted column-wise (nested values keep fastavro's conversions)."""
    fields = []
    for f in record["fields"]:
        inner, nullable = _branch(f["type"])
        if isinstance(inner, dict) and inner.get("type") in PRIMITIVE_ARROW:
            inner = inner["type"]
        fields.append({"name": f["name"], "type": ["null", inner] if nullable else inner})
    return {**record, "fields": fields}


def is_plain(avro: Any) -> bool:
    """A primitive type or a nullable one, without logical type: polars reads those."""
    return isinstance(_branch(avro)[0], str)
