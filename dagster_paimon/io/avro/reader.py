"""Reading an Avro container: its header, block boundaries and runs of blocks."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
from typing import Any, NamedTuple

import pyarrow as pa

from dagster_paimon.errors import CorruptMetadataError, InvalidOptionError
from dagster_paimon.io.avro.codecs import DECOMPRESS
from dagster_paimon.io.avro.container import SYNC_BYTES, parse_header, parse_long
from dagster_paimon.io.avro.decode import BlockDecoder

HEADER_BYTES = 1 << 16
BLOCK_HEAD_BYTES = 20  # a block's row count and size: two longs of at most 10 bytes


class _Block(NamedTuple):
    """Where a block's data starts and how many rows it holds."""

    offset: int
    rows: int


class AvroReader:
    """An Avro file: its blocks, found by their headers and decoded into Arrow columns."""

    def __init__(self, stream: Any, buffer_bytes: int):
        self.stream = stream
        self.buffer_bytes = buffer_bytes
        stream.seek(0, os.SEEK_END)
        self.size = stream.tell()
        self._window, self._window_start = b"", 0
        meta, self.sync, self.first_block = self._header()
        codec = meta.get("avro.codec", b"null").decode()
        if codec not in DECOMPRESS:
            raise InvalidOptionError(
                f"Avro data file uses the codec {codec!r}, not one Paimon writes"
            )
        self.decompress = DECOMPRESS[codec]
        self.decoder = BlockDecoder(json.loads(meta["avro.schema"]), self.sync)
        self.names = list(self.decoder.fields)
        self._blocks: list[_Block] | None = None

    def _read(self, offset: int, size: int) -> bytes:
        """size bytes at offset (fewer at the end of the file), from a window of at least
        buffer_bytes read ahead: small blocks cost one read of the stream per window."""
        end = min(offset + size, self.size)
        window_end = self._window_start + len(self._window)
        if not (self._window_start <= offset and end <= window_end):
            self.stream.seek(offset)
            ahead = min(max(end, offset + self.buffer_bytes), self.size) - offset
            self._window, self._window_start = bytes(self.stream.read(ahead)), offset
        return self._window[offset - self._window_start : end - self._window_start]

    def _header(self) -> tuple[dict[str, bytes], bytes, int]:
        """The container header, read in growing chunks until it is whole."""
        chunk = HEADER_BYTES
        while True:
            try:
                return parse_header(self._read(0, chunk))
            except IndexError:
                if chunk >= self.size:
                    raise CorruptMetadataError("Avro data file ends inside its header") from None
                chunk *= 4

    def _block_head(self, offset: int) -> tuple[int, int, int]:
        """A block's row count, data size and data offset."""
        head = self._read(offset, BLOCK_HEAD_BYTES)
        try:
            rows, pos = parse_long(head, 0)
            size, pos = parse_long(head, pos)
        except IndexError:
            raise CorruptMetadataError("Avro data file ends inside a block header") from None
        return rows, size, offset + pos

    def _read_block(self, offset: int) -> tuple[int, bytes, int]:
        """The block at offset: its row count, decompressed data and the next block's offset."""
        rows, size, start = self._block_head(offset)
        data = self._read(start, size + SYNC_BYTES)
        if len(data) != size + SYNC_BYTES or data[size:] != self.sync:
            raise CorruptMetadataError("Avro data file block does not end with the sync marker")
        return rows, self.decompress(data[:size]), start + size + SYNC_BYTES

    def _runs(self, rows_wanted: int) -> Iterator[tuple[int, bytes]]:
        """Consecutive blocks joined until they hold rows_wanted rows (the last run may hold
        fewer): their row count and data, decoded as one."""
        rows, parts = 0, []
        offset = self.first_block
        while offset < self.size:
            count, data, offset = self._read_block(offset)
            rows += count
            parts.append(data)
            if rows >= rows_wanted:
                yield rows, b"".join(parts)
                rows, parts = 0, []
        if rows:
            yield rows, b"".join(parts)

    def batches(self, batch_rows: int, columns: Sequence[str]) -> Iterator[pa.RecordBatch]:
        """Runs of blocks decoded batch_rows rows or more at a time, cut into batch_rows."""
        rest: pa.Table | None = None
        for rows, data in self._runs(batch_rows):
            table = pa.Table.from_batches([self.decoder.decode(rows, data, columns)])
            if rest is not None:
                table = pa.concat_tables([rest, table])
            full = table.num_rows - table.num_rows % batch_rows
            for start in range(0, full, batch_rows):
                yield from table.slice(start, batch_rows).combine_chunks().to_batches()
            rest = table.slice(full)
        if rest is not None and rest.num_rows:
            yield from rest.combine_chunks().to_batches()

    def _block_index(self) -> list[_Block]:
        """Every block's offset and row count, found by skipping block data."""
        if self._blocks is None:
            blocks = []
            offset = self.first_block
            while offset < self.size:
                rows, size, start = self._block_head(offset)
                blocks.append(_Block(offset, rows))
                offset = start + size + SYNC_BYTES
            self._blocks = blocks
        return self._blocks

    def group_rows(self) -> list[int]:
        """Rows per block."""
        return [b.rows for b in self._block_index()]

    def read_group(self, index: int, columns: Sequence[str]) -> pa.Table:
        """One block."""
        rows, data, _ = self._read_block(self._block_index()[index].offset)
        return pa.Table.from_batches([self.decoder.decode(rows, data, columns)])
