"""The protobuf wire format, enough for ORC's tail: fields decoded in order and re-encoded."""

from __future__ import annotations

import struct
from collections.abc import Iterable

from dagster_paimon.errors import InternalError
from dagster_paimon.io.varint import varint

VARINT, FIXED64, BYTES, FIXED32 = 0, 1, 2, 5

Field = tuple[int, int, int | bytes]  # number, wire type, value (raw bytes for fixed widths)


def _varint(data: bytes | memoryview, pos: int) -> tuple[int, int]:
    """The unsigned varint at pos and the position after it."""
    value = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7


def decode(data: bytes | memoryview) -> list[Field]:
    """A message's fields in the order they appear."""
    fields: list[Field] = []
    pos, end = 0, len(data)
    while pos < end:
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        value: int | bytes
        if wire == VARINT:
            value, pos = _varint(data, pos)
        elif wire == BYTES:
            length, pos = _varint(data, pos)
            value, pos = bytes(data[pos : pos + length]), pos + length
        elif wire in (FIXED64, FIXED32):
            width = 8 if wire == FIXED64 else 4
            value, pos = bytes(data[pos : pos + width]), pos + width
        else:
            raise InternalError(f"protobuf wire type {wire} is not used by ORC")
        fields.append((number, wire, value))
    return fields


def encode(fields: Iterable[Field]) -> bytes:
    """A message from fields, in the order given."""
    out = bytearray()
    for number, wire, value in fields:
        out += varint(number << 3 | wire)
        if wire == VARINT:
            out += varint(int(value))
        elif wire == BYTES:
            out += varint(len(value)) + bytes(value)  # type: ignore[arg-type]
        else:
            out += bytes(value)  # type: ignore[arg-type]
    return bytes(out)


def as_double(raw: bytes) -> float:
    """A double field."""
    return struct.unpack("<d", raw)[0]


def double(value: float) -> bytes:
    """The raw bytes of a double field."""
    return struct.pack("<d", value)


def first(fields: Iterable[Field], number: int) -> int | bytes | None:
    """The value of a field that occurs at most once, or None."""
    return next((value for n, _, value in fields if n == number), None)


def packed(value: bytes) -> list[int]:
    """The varints of a packed repeated field."""
    out, pos = [], 0
    while pos < len(value):
        item, pos = _varint(value, pos)
        out.append(item)
    return out
