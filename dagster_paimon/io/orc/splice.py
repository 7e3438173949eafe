"""Columns swapped into an ORC file: a placeholder column's streams, encoding, type and
statistics replaced by ones encoded elsewhere (`decimals`), the column ids unchanged.

pyarrow writes the file with an all-null placeholder where each such column goes; the stripe
is rebuilt stream by stream (index section, data section, footer) and the tail rewritten.
Files of one stripe (what each of StripedOrcWriter's encoders writes) or none.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from dagster_paimon.errors import InternalError
from dagster_paimon.io.orc.codecs import Codec
from dagster_paimon.io.orc.decimals import DIRECT_V2, ROW_INDEX, EncodedColumn
from dagster_paimon.io.orc.proto import (
    BYTES,
    VARINT,
    Field,
    as_bytes,
    as_int,
    decode,
    encode,
    first_int,
)
from dagster_paimon.io.orc.tail import (
    FOOTER_ROWS,
    FOOTER_STATISTICS,
    FOOTER_STRIPES,
    FOOTER_TYPES,
    MAGIC,
    Tail,
    write_tail,
)

# StripeInformation
INDEX_LENGTH, DATA_LENGTH, FOOTER_LENGTH, NUMBER_OF_ROWS = 2, 3, 4, 5
# StripeFooter, Stream
FOOTER_STREAMS, FOOTER_ENCODINGS = 1, 2
STREAM_KIND, STREAM_COLUMN, STREAM_LENGTH = 1, 2, 3
INDEX_KINDS = (ROW_INDEX, 7, 8)  # ROW_INDEX, BLOOM_FILTER, BLOOM_FILTER_UTF8


@dataclass(frozen=True)
class Swap:
    """What replaces a placeholder column: its type, and its streams in the file's stripe."""

    orc_type: bytes
    column: EncodedColumn | None  # None when the file has no stripe
    statistics: bytes  # the file's statistics of the column


def spliced(data: memoryview, tail: Tail, swaps: Mapping[int, Swap]) -> bytes:
    """The file with each placeholder column (by ORC column id) replaced."""
    stripes = tail.repeated(FOOTER_STRIPES)
    if len(stripes) > 1:
        raise InternalError(f"splicing columns into an ORC file of {len(stripes)} stripes")
    body, infos, stripe_stats = b"", [], []
    if stripes:
        info = decode(stripes[0])
        body, lengths = _stripe(data, info, tail.codec, swaps)
        infos = [encode(_with(info, lengths))]
        stripe_stats = [_stripe_statistics(tail.stripe_statistics[0], swaps)]
    types = tail.repeated(FOOTER_TYPES)
    footer = [f for f in tail.footer if f[0] != FOOTER_TYPES]
    at = next(i for i, f in enumerate(footer) if f[0] > FOOTER_TYPES)
    footer[at:at] = [
        (FOOTER_TYPES, BYTES, swaps[c].orc_type if c in swaps else t) for c, t in enumerate(types)
    ]
    statistics = [
        swaps[c].statistics if c in swaps else s
        for c, s in enumerate(tail.repeated(FOOTER_STATISTICS))
    ]
    rows = first_int(tail.footer, FOOTER_ROWS)
    new_tail = Tail(tail.postscript, footer, [])
    return MAGIC + body + write_tail(new_tail, len(body), infos, rows, stripe_stats, statistics)


def _stripe(
    data: memoryview, info: list[Field], codec: Codec, swaps: Mapping[int, Swap]
) -> tuple[bytes, dict[int, int]]:
    """A stripe with the swapped columns' streams, and its new section lengths."""
    fields = {n: as_int(v) for n, _, v in info if n <= NUMBER_OF_ROWS}
    start = fields[1]
    footer_at = start + fields[INDEX_LENGTH] + fields[DATA_LENGTH]
    footer = decode(codec.decompress(data[footer_at : footer_at + fields[FOOTER_LENGTH]]))
    index: list[tuple[int, int, bytes]] = []
    body: list[tuple[int, int, bytes]] = []
    placed: set[tuple[int, bool]] = set()
    pos = start
    for n, _, value in footer:
        if n != FOOTER_STREAMS:
            continue
        stream = {k: as_int(v) for k, _, v in decode(as_bytes(value))}
        kind, column = stream.get(STREAM_KIND, 0), stream.get(STREAM_COLUMN, 0)
        length = stream.get(STREAM_LENGTH, 0)
        section = index if kind in INDEX_KINDS else body
        if column in swaps:
            is_index = kind in INDEX_KINDS
            if (column, is_index) not in placed:
                placed.add((column, is_index))
                for new_kind, stored in _swapped_streams(swaps[column], is_index):
                    section.append((new_kind, column, stored))
        else:
            section.append((kind, column, bytes(data[pos : pos + length])))
        pos += length
    missing = {c for c in swaps if (c, False) not in placed}
    if missing:
        raise InternalError(f"ORC placeholder columns {sorted(missing)} have no data streams")
    new_footer = encode(
        [
            *(
                (FOOTER_STREAMS, BYTES, _stream(kind, column, len(stored)))
                for kind, column, stored in index + body
            ),
            *(
                (n, w, _encoding(c, as_bytes(v), swaps))
                for c, (n, w, v) in enumerate(f for f in footer if f[0] == FOOTER_ENCODINGS)
            ),
            *(f for f in footer if f[0] > FOOTER_ENCODINGS),
        ]
    )
    stored_footer = codec.stored_original(new_footer)
    index_bytes = b"".join(s for _, _, s in index)
    data_bytes = b"".join(s for _, _, s in body)
    lengths = {
        INDEX_LENGTH: len(index_bytes),
        DATA_LENGTH: len(data_bytes),
        FOOTER_LENGTH: len(stored_footer),
    }
    return index_bytes + data_bytes + stored_footer, lengths


def _swapped_streams(swap: Swap, index: bool) -> list[tuple[int, bytes]]:
    """A swapped column's streams of one section."""
    assert swap.column is not None
    if index:
        return [(ROW_INDEX, swap.column.row_index)] if swap.column.row_index else []
    return swap.column.data_streams


def _stream(kind: int, column: int, length: int) -> bytes:
    """A Stream entry of a stripe footer."""
    return encode(
        [
            (STREAM_KIND, VARINT, kind),
            (STREAM_COLUMN, VARINT, column),
            (STREAM_LENGTH, VARINT, length),
        ]
    )


def _encoding(column: int, value: bytes, swaps: Mapping[int, Swap]) -> bytes:
    """A column's ColumnEncoding: DIRECT_V2 for a swapped one."""
    return encode([(1, VARINT, DIRECT_V2), (2, VARINT, 0)]) if column in swaps else value


def _with(info: list[Field], lengths: dict[int, int]) -> list[Field]:
    """A StripeInformation with new section lengths."""
    return [(n, w, lengths.get(n, v)) for n, w, v in info]


def _stripe_statistics(message: bytes, swaps: Mapping[int, Swap]) -> bytes:
    """StripeStatistics whose swapped columns have their encoded statistics."""
    fields: list[Field] = []
    for c, (n, w, v) in enumerate(decode(message)):
        column = swaps[c].column if c in swaps else None
        fields.append((n, w, column.statistics if column else v))
    return encode(fields)
