"""Writing an Avro container: blocks of about BLOCK_BYTES, each written once encoded."""

from __future__ import annotations

import os
from typing import Any

import pyarrow as pa

from dagster_paimon.errors import SchemaMismatchError
from dagster_paimon.io.avro.codecs import COMPRESS
from dagster_paimon.io.avro.container import SYNC_BYTES, encode_header, encode_long
from dagster_paimon.io.avro.encode import encode_rows
from dagster_paimon.io.avro.schema import avro_schema

BLOCK_BYTES = 1 << 20
FIRST_BLOCK_ROWS = 4096


class AvroWriter:
    """A container of blocks of about BLOCK_BYTES, each written as soon as it is encoded."""

    def __init__(self, stream: Any, schema: pa.Schema, codec: str, level: int | None):
        self.stream = stream
        self.schema = schema
        self.compress = COMPRESS[codec]
        self.level = level
        self.sync = os.urandom(SYNC_BYTES)
        self.block_rows = FIRST_BLOCK_ROWS
        stream.write(encode_header(avro_schema(schema), codec, self.sync))

    def write_batch(self, batch: pa.RecordBatch) -> None:
        """Encode and write the rows in blocks, sized from the bytes per row seen so far."""
        for f, column in zip(self.schema, batch.columns, strict=True):
            if not f.nullable and column.null_count:
                raise SchemaMismatchError(
                    f"column {f.name!r} is NOT NULL but a batch written to Avro has nulls in it"
                )
        offset = 0
        while offset < batch.num_rows:
            rows = min(self.block_rows, batch.num_rows - offset)
            data = encode_rows(self.schema, batch.slice(offset, rows))
            self._write_block(rows, data)
            offset += rows
            self.block_rows = max(1, BLOCK_BYTES * rows // max(len(data), 1))

    def _write_block(self, rows: int, data: bytes) -> None:
        """One block: row count, compressed size, data, sync marker."""
        packed = self.compress(data, self.level)
        self.stream.write(encode_long(rows) + encode_long(len(packed)) + packed + self.sync)

    def close(self) -> None:
        """Nothing is buffered: every block is already written (the stream stays open)."""
