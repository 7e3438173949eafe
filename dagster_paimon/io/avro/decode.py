"""Decoding Avro block data into Arrow columns: by polars when every column is primitive."""

from __future__ import annotations

from collections.abc import Sequence
from io import BytesIO
from typing import Any, cast

import fastavro
import numpy as np
import polars as pl
import pyarrow as pa

from dagster_paimon.errors import CorruptMetadataError
from dagster_paimon.io.avro.container import encode_header, encode_long
from dagster_paimon.io.avro.schema import arrow_field, is_plain, raw_columns, record_of


class BlockDecoder:
    """The rows of a file's blocks as Arrow columns of the types its Avro schema names."""

    def __init__(self, schema: Any, sync: bytes):
        record = record_of(schema)
        self.fields = {f["name"]: arrow_field(f["name"], f["type"]) for f in record["fields"]}
        items = raw_columns(record)
        self.fastavro_schema = fastavro.parse_schema(
            {"type": "array", "items": ["null", items] if isinstance(schema, list) else items}
        )
        flat = isinstance(schema, dict) and all(is_plain(f["type"]) for f in items["fields"])
        self.flat_header = encode_header(items, "null", sync) if flat else None
        self.sync = sync

    def decode(self, rows: int, data: bytes, columns: Sequence[str]) -> pa.RecordBatch:
        """The rows of one or more consecutive blocks (their data joined) as Arrow columns of
        the file's types."""
        fields = [self.fields[c] for c in columns]
        if self.flat_header is None:
            values: Sequence[list | pa.Array] = self._records(rows, data, columns)
        else:
            values = self._flat(self.flat_header, rows, data, columns)
        arrays = [_column(v, f.type) for v, f in zip(values, fields, strict=True)]
        return pa.RecordBatch.from_arrays(arrays, schema=pa.schema(fields))

    def _flat(
        self, header: bytes, rows: int, data: bytes, columns: Sequence[str]
    ) -> list[pa.Array]:
        """Columns of plain Avro types, by polars' (Rust) Avro reader: the rows are made one
        block of a container of their own after `header`, uncompressed, without logical types."""
        container = header + encode_long(rows) + encode_long(len(data)) + data + self.sync
        wanted = list(dict.fromkeys(columns))
        table = pl.read_avro(BytesIO(container), columns=wanted).to_arrow()
        return [table.column(c).combine_chunks() for c in columns]

    def _records(self, rows: int, data: bytes, columns: Sequence[str]) -> list[list]:
        """Column values by fastavro, the data read at once as the body of an Avro array of
        `rows` records."""
        array = BytesIO(encode_long(rows) + data + b"\0")
        # the schema is an array of records: fastavro gives a list of dicts
        records = cast(
            list[dict[str, Any]], fastavro.schemaless_reader(array, self.fastavro_schema, None)
        )
        return [[r[c] for r in records] for c in columns]


def _column(values: list | pa.Array, t: pa.DataType) -> pa.Array:
    """Decoded values of one column (Python values, or an Arrow array of plain Avro types) as
    an Arrow array of type t: top-level decimals arrive as bytes, dates and times as numbers."""
    if pa.types.is_decimal128(t):
        raw = pa.array(values, pa.binary()) if isinstance(values, list) else values
        return _decimals(raw.cast(pa.binary()), t)
    return pa.array(values, t) if isinstance(values, list) else values.cast(t)


def _decimals(raw: pa.BinaryArray, t: pa.Decimal128Type) -> pa.Array:
    """Big-endian two's-complement unscaled values (a fresh array) as decimal128: each is
    sign-extended to 16 bytes, then byte-reversed."""
    n = len(raw)
    offsets = np.frombuffer(raw.buffers()[1], np.int32)[: n + 1].astype(np.int64)
    lengths = np.diff(offsets)
    if (lengths > 16).any():
        raise CorruptMetadataError(f"Avro decimal of more than 16 bytes for {t}")
    data = np.frombuffer(raw.buffers()[2] or b"", np.uint8)[offsets[0] : offsets[-1]]
    starts = offsets[:-1] - offsets[0]
    first = np.zeros(n, np.uint8)
    present = lengths > 0
    first[present] = data[starts[present]]
    big_endian = np.where(first >= 0x80, 0xFF, 0).astype(np.uint8)[:, None].repeat(16, axis=1)
    row = np.repeat(np.arange(n), lengths)
    column = np.arange(len(data)) - np.repeat(starts - 16 + lengths, lengths)
    big_endian[row, column] = data
    little_endian = np.ascontiguousarray(big_endian[:, ::-1])
    return pa.Array.from_buffers(t, n, [raw.buffers()[0], pa.py_buffer(little_endian)])
