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
            out += varint(int(value))  # numpy integers too
        elif wire == BYTES:
            raw = as_bytes(value)
            out += varint(len(raw)) + raw
        else:
            out += as_bytes(value)
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


def as_int(value: int | bytes) -> int:
    """A varint field's value; raw bytes where a varint belongs are a malformed message."""
    if isinstance(value, bytes):
        raise InternalError("protobuf field holds bytes where ORC writes a varint")
    return value


def as_bytes(value: int | bytes) -> bytes:
    """A length-delimited or fixed-width field's bytes; a varint there is a malformed message."""
    if isinstance(value, int):
        raise InternalError("protobuf field holds a varint where ORC writes bytes")
    return value


def first_int(fields: Iterable[Field], number: int, default: int = 0) -> int:
    """The value of a varint field that occurs at most once, or `default` when absent or 0."""
    value = first(fields, number)
    return as_int(value) or default if value is not None else default


def first_bytes(fields: Iterable[Field], number: int) -> bytes:
    """The bytes of a length-delimited field that occurs at most once (empty when absent)."""
    value = first(fields, number)
    return b"" if value is None else as_bytes(value)


def packed(value: bytes) -> list[int]:
    """The varints of a packed repeated field."""
    out, pos = [], 0
    while pos < len(value):
        item, pos = _varint(value, pos)
        out.append(item)
    return out
