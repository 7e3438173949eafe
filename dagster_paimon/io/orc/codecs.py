"""ORC's compressed sections: chunks of at most the file's compression block, each behind a
3-byte header (length << 1 | original), compressed with the file's codec or kept original."""

from __future__ import annotations

import zlib
from collections.abc import Callable
from dataclasses import dataclass

import cramjam
from backports import zstd

from dagster_paimon.errors import InternalError

# CompressionKind of orc_proto.proto
NONE, ZLIB, SNAPPY, LZO, LZ4, ZSTD = range(6)
CHUNK_HEADER = 3
MAX_CHUNK = (1 << 23) - 1  # a chunk's length has 23 bits
ZSTD_LEVEL = 1  # ORC C++'s zstd level under compression_strategy="speed"


def _deflate(data: bytes) -> bytes:
    """ZLIB chunks are raw deflate (no zlib header), at ORC C++'s speed level."""
    packer = zlib.compressobj(1, zlib.DEFLATED, -15)
    return packer.compress(data) + packer.flush()


COMPRESS: dict[int, Callable[[bytes], bytes]] = {
    ZLIB: _deflate,
    SNAPPY: lambda data: bytes(cramjam.snappy.compress_raw(data)),
    LZ4: lambda data: bytes(cramjam.lz4.compress_block(data, store_size=False)),
    ZSTD: lambda data: zstd.compress(data, level=ZSTD_LEVEL),
}


def _lz4_block(chunk: bytes, block: int) -> bytes:
    """A raw LZ4 block of at most `block` bytes (it does not record its own length)."""
    out = bytearray(block)
    return bytes(out[: cramjam.lz4.decompress_block_into(chunk, out)])


DECOMPRESS: dict[int, Callable[[bytes, int], bytes]] = {
    ZLIB: lambda chunk, _: zlib.decompress(chunk, -15),
    SNAPPY: lambda chunk, _: bytes(cramjam.snappy.decompress_raw(chunk)),
    LZ4: _lz4_block,
    ZSTD: lambda chunk, _: zstd.decompress(chunk),
}


def _header(length: int, original: bool) -> bytes:
    """A chunk's 3-byte little-endian header."""
    return ((length << 1) | int(original)).to_bytes(CHUNK_HEADER, "little")


@dataclass(frozen=True)
class Codec:
    """A file's compression kind and block size, as its postscript gives them."""

    kind: int
    block: int

    @property
    def chunk(self) -> int:
        """Uncompressed bytes per chunk."""
        return max(1, min(self.block, MAX_CHUNK))

    def decompress(self, section: memoryview | bytes) -> memoryview | bytes:
        """A stored section's bytes."""
        if self.kind == NONE:
            return section
        if self.kind not in DECOMPRESS:
            raise InternalError(f"ORC compression kind {self.kind} is not one pyarrow writes")
        out = bytearray()
        pos = 0
        while pos < len(section):
            header = int.from_bytes(section[pos : pos + CHUNK_HEADER], "little")
            start, pos = pos + CHUNK_HEADER, pos + CHUNK_HEADER + (header >> 1)
            chunk = section[start:pos]
            out += chunk if header & 1 else DECOMPRESS[self.kind](bytes(chunk), self.block)
        return bytes(out)

    def stored_original(self, data: bytes) -> bytes:
        """A section as original (uncompressed) chunks, which every reader accepts."""
        if self.kind == NONE:
            return data
        size = self.chunk
        return b"".join(
            _header(len(data[i : i + size]), True) + data[i : i + size]
            for i in range(0, len(data), size)
        )

    def compressed(self, data: bytes | memoryview) -> tuple[bytes, list[int]]:
        """A stream as ORC's writer stores it, and where each chunk starts in it; a chunk that
        does not shrink is kept original, as that writer does."""
        if self.kind == NONE:
            return bytes(data), []
        if self.kind not in COMPRESS:
            raise InternalError(f"ORC compression kind {self.kind} is not one pyarrow writes")
        compress, size = COMPRESS[self.kind], self.chunk
        parts, starts, pos = [], [], 0
        for i in range(0, len(data), size):
            block = bytes(data[i : i + size])
            packed = compress(block)
            original = len(packed) >= len(block)
            chunk = _header(len(block) if original else len(packed), original)
            chunk += block if original else packed
            starts.append(pos)
            parts.append(chunk)
            pos += len(chunk)
        return b"".join(parts), starts

    def positions(self, offset: int, starts: list[int]) -> list[int]:
        """A row index's position of an uncompressed offset: the chunk's start and the offset
        in it ([offset] uncompressed); an offset at a chunk's end stays in that chunk."""
        if self.kind == NONE:
            return [offset]
        if offset == 0:
            return [0, 0]
        index = (offset - 1) // self.chunk
        return [starts[index], offset - index * self.chunk]
