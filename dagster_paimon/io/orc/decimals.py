"""A stripe's DECIMAL(p<=18) column encoded with numpy, as ORC's writers lay it out.

ORC C++ spends most of an ORC write on these columns: two Int128 divisions per value to keep
their minimum and maximum. Here a column is encoded whole (DIRECT_V2): PRESENT (boolean RLE,
only when it has nulls), DATA (the unscaled values as zigzag base-128 varints), SECONDARY (the
scale of each value, RLEv2), its row index (stream positions and statistics per row group) and
its stripe statistics, all as ORC readers expect them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from dagster_paimon.io.orc.codecs import Codec
from dagster_paimon.io.orc.proto import BYTES, VARINT, Field, encode
from dagster_paimon.io.orc.stats import DECIMAL, HAS_NULL, NUMBER_OF_VALUES, decimal_text
from dagster_paimon.io.varint import varint, zigzag, zigzag_varints

MAX_PRECISION = 18  # unscaled values fit an int64: ORC's Decimal64 columns
# Stream.Kind and ColumnEncoding.Kind of orc_proto.proto
PRESENT, DATA, SECONDARY, ROW_INDEX = 0, 1, 5, 6
DIRECT_V2 = 2
DECIMAL_STATISTICS = 6
RLE_RUN = 512  # values per RLEv2 run
LITERALS = 128  # bytes per byte-RLE literal group


@dataclass(frozen=True)
class EncodedColumn:
    """A column's streams in one stripe, stored (compressed) as the file's codec stores them."""

    data_streams: list[tuple[int, bytes]]  # (Stream.Kind, bytes) in stripe order
    row_index: bytes  # the ROW_INDEX stream; empty when the file has no row index
    statistics: bytes  # the stripe's ColumnStatistics


def decimal_type(precision: int, scale: int) -> bytes:
    """An ORC Type of a decimal, its fields as ORC C++ writes them."""
    return encode(
        [(1, VARINT, DECIMAL), (4, VARINT, 0), (5, VARINT, precision), (6, VARINT, scale)]
    )


@dataclass(frozen=True)
class Summary:
    """Decimal values of a row group or stripe: how many, whether any slot was null, and the
    unscaled minimum, maximum and sum."""

    count: int
    has_null: bool
    low: int = 0
    high: int = 0
    total: int = 0

    def statistics(self, scale: int) -> bytes:
        """Their ColumnStatistics as ORC C++ writes them (the decimal sub-message always)."""
        typed: list[Field] = []
        if self.count:
            typed += [
                (1, BYTES, decimal_text(self.low, scale).encode()),
                (2, BYTES, decimal_text(self.high, scale).encode()),
            ]
        typed.append((3, BYTES, decimal_text(self.total, scale).encode()))
        return encode(
            [
                (NUMBER_OF_VALUES, VARINT, self.count),
                (DECIMAL_STATISTICS, BYTES, encode(typed)),
                (HAS_NULL, VARINT, int(self.has_null)),
            ]
        )


def unscaled(array: pa.Array) -> np.ndarray:
    """The unscaled int64 of every slot of a decimal128 array of precision <= 18 (nulls too)."""
    buffer = array.buffers()[1]
    words = np.frombuffer(buffer, dtype=np.int64) if buffer is not None else np.zeros(0, np.int64)
    return words[2 * array.offset : 2 * (array.offset + len(array)) : 2]


def _scale_run(count: int, value: int) -> bytes:
    """One RLEv2 run of `count` (1..512) equal small values, zigzag-encoded `value`."""
    if count < 3:  # DIRECT, 8 bits per value
        return bytes([0x40 | 7 << 1, count - 1]) + bytes([value]) * count
    if count <= 10:  # SHORT_REPEAT, a one-byte value
        return bytes([count - 3, value])
    return bytes([0xC0 | (count - 1) >> 8, (count - 1) & 0xFF]) + varint(value) + b"\x00"  # DELTA 0


def _scales(count: int, scale: int) -> bytes:
    """SECONDARY bytes of `count` values: the column's scale in runs of 512."""
    full, rest = divmod(count, RLE_RUN)
    value = zigzag(scale)
    return _scale_run(RLE_RUN, value) * full + (_scale_run(rest, value) if rest else b"")


def _present(valid: np.ndarray) -> np.ndarray:
    """PRESENT bytes: the validity bits MSB first, as byte-RLE literal groups of 128 bytes."""
    bits = np.packbits(valid)
    groups = -(-len(bits) // LITERALS)
    out = np.empty(len(bits) + groups, dtype=np.uint8)
    heads = np.arange(groups) * (LITERALS + 1)
    body = np.ones(len(out), dtype=bool)
    body[heads] = False
    out[body] = bits
    out[heads] = 0x80  # -128: a literal group of 128 bytes
    out[heads[-1]] = (256 - (len(bits) - (groups - 1) * LITERALS)) & 0xFF
    return out


def encoded_decimal(array: pa.Array, scale: int, codec: Codec, stride: int) -> EncodedColumn:
    """A stripe's decimal column (precision <= 18) with its row index and statistics."""
    rows = len(array)
    slots = unscaled(array)
    valid = array.is_valid().to_numpy(zero_copy_only=False) if array.null_count else None
    values = np.ascontiguousarray(slots[valid] if valid is not None else slots)
    data, ends = zigzag_varints(values)
    group_rows = np.arange(0, rows, stride) if stride else np.zeros(1, dtype=np.int64)
    before = (
        np.concatenate([[0], np.cumsum(valid)])[group_rows] if valid is not None else group_rows
    )
    counts = np.diff(np.append(before, len(values)))
    data_at = np.concatenate([[0], ends])[before]
    scale_parts = [_scales(int(c), scale) for c in counts]
    scale_at = np.cumsum([0, *map(len, scale_parts)])[:-1]
    streams: list[tuple[int, bytes]] = []
    positions: list[list[int]] = [[] for _ in group_rows]
    if valid is not None:
        present, starts = codec.compressed(_present(valid).tobytes())
        streams.append((PRESENT, present))
        byte = group_rows // 8
        head = byte // LITERALS * (LITERALS + 1)
        for g, (h, b, r) in enumerate(zip(head, byte, group_rows, strict=True)):
            positions[g] += [*codec.positions(int(h), starts), int(b % LITERALS), int(r % 8)]
    stored, starts = codec.compressed(data.tobytes())
    streams.append((DATA, stored))
    for g, offset in enumerate(data_at):
        positions[g] += codec.positions(int(offset), starts)
    stored, starts = codec.compressed(b"".join(scale_parts))
    streams.append((SECONDARY, stored))
    for g, offset in enumerate(scale_at):
        positions[g] += [*codec.positions(int(offset), starts), 0]
    groups = _group_summaries(values, counts, np.diff(np.append(group_rows, rows)))
    row_index = b""
    if stride:
        entries = encode(
            (
                1,
                BYTES,
                encode([(1, BYTES, b"".join(map(varint, p))), (2, BYTES, g.statistics(scale))]),
            )
            for p, g in zip(positions, groups, strict=True)
        )
        row_index = codec.compressed(entries)[0]
    filled = [g for g in groups if g.count]
    stripe = Summary(
        len(values),
        len(values) < rows,
        min((g.low for g in filled), default=0),
        max((g.high for g in filled), default=0),
        sum(g.total for g in filled),
    ).statistics(scale)
    return EncodedColumn(streams, row_index, stripe)


def _group_summaries(values: np.ndarray, counts: np.ndarray, sizes: np.ndarray) -> list[Summary]:
    """Each row group's summary, from its count of values and of rows; sums exact, as the
    high and low 32-bit halves of the values are summed apart."""
    filled = counts > 0
    starts = (np.cumsum(counts) - counts)[filled]
    if len(starts):
        lows = np.minimum.reduceat(values, starts).tolist()
        highs = np.maximum.reduceat(values, starts).tolist()
        his = np.add.reduceat(values >> 32, starts).tolist()
        los = np.add.reduceat(values & 0xFFFFFFFF, starts).tolist()
    out, k = [], 0
    for count, size, has in zip(counts.tolist(), sizes.tolist(), filled.tolist(), strict=True):
        if has:
            out.append(Summary(count, count < size, lows[k], highs[k], (his[k] << 32) + los[k]))
            k += 1
        else:
            out.append(Summary(0, size > 0))
    return out
