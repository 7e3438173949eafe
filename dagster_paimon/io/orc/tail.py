"""An ORC file's tail (postscript, footer, stripe statistics): read from one writer's file,
and written for stitched stripes.

The stitched tail takes everything but the stripes, row count and statistics from the first
part, so the schema, writer and version are the ones pyarrow wrote. Its footer and metadata are
stored as ORC's "original" (uncompressed) chunks, which every reader accepts.
"""

from __future__ import annotations

from dataclasses import dataclass

from dagster_paimon.errors import InternalError
from dagster_paimon.io.orc.codecs import NONE, Codec
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

MAGIC = b"ORC"
# PostScript
PS_FOOTER_LENGTH, PS_COMPRESSION, PS_BLOCK_SIZE, PS_METADATA_LENGTH = 1, 2, 3, 5
# Footer
FOOTER_CONTENT_LENGTH, FOOTER_STRIPES, FOOTER_TYPES, FOOTER_ROWS, FOOTER_STATISTICS = 2, 3, 4, 6, 7
FOOTER_ROW_INDEX_STRIDE = 8
STRIPE_OFFSET = 1  # StripeInformation
STRIPE_STATISTICS = 1  # Metadata


@dataclass(frozen=True)
class Tail:
    """What stitching needs of one writer's file."""

    postscript: list[Field]
    footer: list[Field]
    stripe_statistics: list[bytes]

    @property
    def stripes_length(self) -> int:
        """Bytes of the stripes, which follow the header (ORC C++'s content_length)."""
        return first_int(self.footer, FOOTER_CONTENT_LENGTH)

    @property
    def codec(self) -> Codec:
        """The file's compression kind and block size."""
        return codec_of(self.postscript)

    def repeated(self, number: int) -> list[bytes]:
        """Every value of a repeated message field of the footer."""
        return [as_bytes(v) for n, _, v in self.footer if n == number]


def codec_of(postscript: list[Field]) -> Codec:
    """The compression a postscript names."""
    kind = first_int(postscript, PS_COMPRESSION, NONE)
    return Codec(kind, first_int(postscript, PS_BLOCK_SIZE))


def read_tail(data: memoryview) -> Tail:
    """The postscript, footer and stripe statistics of an ORC file held in memory."""
    ps_length = data[-1]
    ps_end = len(data) - 1
    postscript = decode(data[ps_end - ps_length : ps_end])
    codec = codec_of(postscript)
    footer_end = ps_end - ps_length
    footer_start = footer_end - first_int(postscript, PS_FOOTER_LENGTH)
    meta_start = footer_start - first_int(postscript, PS_METADATA_LENGTH)
    footer = decode(codec.decompress(data[footer_start:footer_end]))
    metadata = decode(codec.decompress(data[meta_start:footer_start]))
    stripe_stats = [as_bytes(v) for n, _, v in metadata if n == STRIPE_STATISTICS]
    return Tail(postscript, footer, stripe_stats)


def moved_stripe(info: bytes, shift: int) -> bytes:
    """A StripeInformation whose stripe now starts `shift` bytes later in the file."""
    return encode(
        (n, w, as_int(v) + shift if n == STRIPE_OFFSET else v) for n, w, v in decode(info)
    )


def write_tail(
    first_part: Tail,
    stripes_length: int,
    stripes: list[bytes],
    rows: int,
    stripe_statistics: list[bytes],
    statistics: list[bytes],
) -> bytes:
    """Metadata, footer, postscript and its length byte of the stitched file."""
    ps = first_part.postscript
    keep = first_part.footer
    footer = encode(
        [
            *(f for f in keep if f[0] < FOOTER_CONTENT_LENGTH),
            (FOOTER_CONTENT_LENGTH, VARINT, stripes_length),
            *((FOOTER_STRIPES, BYTES, s) for s in stripes),
            *(f for f in keep if FOOTER_STRIPES < f[0] < FOOTER_ROWS),
            (FOOTER_ROWS, VARINT, rows),
            *((FOOTER_STATISTICS, BYTES, s) for s in statistics),
            *(f for f in keep if f[0] > FOOTER_STATISTICS),
        ]
    )
    metadata = encode((STRIPE_STATISTICS, BYTES, s) for s in stripe_statistics)
    codec = first_part.codec
    metadata, footer = codec.stored_original(metadata), codec.stored_original(footer)
    postscript = encode(
        [
            (PS_FOOTER_LENGTH, VARINT, len(footer)),
            *(f for f in ps if PS_FOOTER_LENGTH < f[0] < PS_METADATA_LENGTH),
            (PS_METADATA_LENGTH, VARINT, len(metadata)),
            *(f for f in ps if f[0] > PS_METADATA_LENGTH),
        ]
    )
    if len(postscript) > 255:
        raise InternalError(f"ORC postscript of {len(postscript)} bytes exceeds 255")
    return metadata + footer + postscript + bytes([len(postscript)])
