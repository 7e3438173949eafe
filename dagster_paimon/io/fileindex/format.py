"""FileIndexFormat: the one blob holding every index of a data file.

Magic (8 bytes), version 1, head length, then per column its name, index count and each index's
name, body start (from the blob's start) and length; a zero redundant length; then the bodies.
Ints are big-endian, names Java's modified UTF-8 (DataOutput.writeUTF). Columns, and each
column's index types, are written sorted by name: Java's reader loads the header into maps, so
any order reads the same (Java's writer follows its HashMaps' iteration order).
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

from dagster_paimon.errors import InvalidTableSpecError

MAGIC = 1493475289347502
VERSION_1 = 1
EMPTY_INDEX_FLAG = -1


def write_utf(text: str) -> bytes:
    """DataOutput.writeUTF: a two-byte length, then modified UTF-8 (NUL as two bytes,
    supplementary characters as two three-byte surrogates)."""
    units = text.encode("utf-16-be")
    out = bytearray()
    for i in range(0, len(units), 2):
        c = units[i] << 8 | units[i + 1]
        if 0 < c < 0x80:
            out.append(c)
        elif c < 0x800:
            out += bytes((0xC0 | c >> 6, 0x80 | c & 0x3F))
        else:
            out += bytes((0xE0 | c >> 12, 0x80 | c >> 6 & 0x3F, 0x80 | c & 0x3F))
    if len(out) > 0xFFFF:
        raise InvalidTableSpecError(f"name too long for a file index header: {text[:40]}...")
    return struct.pack(">H", len(out)) + bytes(out)


def serialize(indexes: Sequence[tuple[str, str, bytes]]) -> bytes:
    """The blob of (column, index type, index bytes), columns and their types sorted by name."""
    by_column: dict[str, dict[str, bytes]] = {}
    for column, index_type, index_bytes in indexes:
        by_column.setdefault(column, {})[index_type] = index_bytes
    layout = [(c, sorted(by_column[c])) for c in sorted(by_column)]
    names = b"".join(write_utf(c) + b"".join(write_utf(t) for t in types) for c, types in layout)
    entries = sum(len(types) for _, types in layout)
    head_length = 8 + 4 + 4 + 4 + entries * 8 + len(layout) * 4 + 4 + len(names)
    head = bytearray(struct.pack(">qiii", MAGIC, VERSION_1, head_length, len(layout)))
    body = bytearray()
    for column, types in layout:
        head += write_utf(column) + struct.pack(">i", len(types))
        for index_type in types:
            data = by_column[column][index_type]
            head += write_utf(index_type) + struct.pack(">ii", head_length + len(body), len(data))
            body += data
    head += struct.pack(">i", 0)
    return bytes(head + body)
