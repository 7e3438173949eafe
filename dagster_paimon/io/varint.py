"""Zigzag and base-128 varints, as ORC's streams and protobuf and Avro's longs encode them:
one value at a time for metadata, a whole column at once for data."""

from __future__ import annotations

import numpy as np


def zigzag(value: int) -> int:
    """The zigzag form of a signed 64-bit value."""
    return (value << 1) ^ (value >> 63)


def unzigzag(value: int) -> int:
    """The signed value of a zigzag form."""
    return (value >> 1) ^ -(value & 1)


def varint(value: int) -> bytes:
    """An unsigned base-128 varint (a negative value as its 64-bit two's complement)."""
    value &= (1 << 64) - 1
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def zigzag_varints(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Zigzag base-128 varints of int64 values, and each one's end offset.

    Septet k of every value is computed at once and stored at each value's start + k; when
    every value has the same length the bytes are a values x length matrix instead.
    """
    zig = ((values << 1) ^ (values >> 63)).view(np.uint64)
    top = int(zig.max()) if len(zig) else 0
    width = max(1, -(-top.bit_length() // 7))
    kind = np.uint32 if 7 * width <= 32 else np.uint64  # half the memory traffic when it fits
    zig = zig.astype(kind)
    lengths = np.ones(len(zig), dtype=np.uint8)
    for k in range(1, width):
        lengths += zig >= kind(1 << (7 * k))
    ends = np.cumsum(lengths, dtype=np.int64)
    shortest = int(lengths.min()) if len(zig) else width
    fixed = shortest == width
    out = np.empty((len(zig), width) if fixed else int(ends[-1]), dtype=np.uint8)
    starts = ends - lengths
    for k in range(width):
        septet = ((zig >> kind(7 * k)) & kind(0x7F)).astype(np.uint8)
        septet |= (lengths > k + 1).view(np.uint8) << 7
        if fixed:
            out[:, k] = septet
        elif k < shortest:
            out[starts + k] = septet
        else:
            pick = lengths > k
            out[starts[pick] + k] = septet[pick]
    return out.reshape(-1), ends
