"""The Avro container: longs, the header with its schema, codec and sync marker."""

from __future__ import annotations

import json

from dagster_paimon.errors import CorruptMetadataError
from dagster_paimon.io.varint import varint, zigzag

AVRO_MAGIC = b"Obj\x01"
SYNC_BYTES = 16


def encode_long(value: int) -> bytes:
    """One Avro long: zigzag, then base-128 varint."""
    return varint(zigzag(value))


def parse_long(data: bytes, pos: int) -> tuple[int, int]:
    """The Avro long at pos in data, and the position after it (IndexError past the end)."""
    shift = n = 0
    while True:
        byte = data[pos]
        pos += 1
        n |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return (n >> 1) ^ -(n & 1), pos


def _parse_bytes(data: bytes, pos: int) -> tuple[bytes, int]:
    """Avro bytes (length, then content) at pos, and the position after them."""
    size, pos = parse_long(data, pos)
    if pos + size > len(data):
        raise IndexError("Avro bytes past the end")
    return data[pos : pos + size], pos + size


def encode_header(schema: dict, codec: str, sync: bytes) -> bytes:
    """The container header: magic, schema and codec metadata, sync marker."""
    meta = {
        b"avro.schema": json.dumps(schema, separators=(",", ":")).encode(),
        b"avro.codec": codec.encode(),
    }
    out = bytearray(AVRO_MAGIC + encode_long(len(meta)))
    for key, value in meta.items():
        out += encode_long(len(key)) + key + encode_long(len(value)) + value
    return bytes(out + encode_long(0) + sync)


def parse_header(data: bytes) -> tuple[dict[str, bytes], bytes, int]:
    """Metadata, sync marker and first block's offset from a container's leading bytes
    (IndexError when they end inside the header)."""
    if len(data) >= len(AVRO_MAGIC) and not data.startswith(AVRO_MAGIC):
        raise CorruptMetadataError("not an Avro data file (bad magic)")
    meta: dict[str, bytes] = {}
    count, pos = parse_long(data, len(AVRO_MAGIC))
    while count:
        if count < 0:
            count = -count
            _, pos = parse_long(data, pos)  # the map block's byte size
        for _ in range(count):
            key, pos = _parse_bytes(data, pos)
            meta[key.decode()], pos = _parse_bytes(data, pos)
        count, pos = parse_long(data, pos)
    if pos + SYNC_BYTES > len(data):
        raise IndexError("Avro header ends before its sync marker")
    return meta, data[pos : pos + SYNC_BYTES], pos + SYNC_BYTES
